"""By hand (not CI): upstream code's `import roverd` (and `roverd.channels.utils`,
`roverd.transforms.ouster`, ...) gets `roverlog.redrover` and its submodules. Put this
directory first on PYTHONPATH, e.g. to run upstream red-rover's own tests or roverp on ours:

    PYTHONPATH=python/benches/roverd_alias python -m pytest <red-rover>/format/tests/test_channels.py
    PYTHONPATH=python/benches/roverd_alias:<red-rover>/processing/src python -c "import roverp._cli.sensorpose"
"""
import importlib
import importlib.abc
import importlib.util
import sys


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "roverd" or name.startswith("roverd."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("roverlog.redrover" + spec.name[len("roverd"):])

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Alias())
del sys.modules["roverd"]
sys.modules["roverd"] = importlib.import_module("roverd")

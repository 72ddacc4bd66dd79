"""Runs gulpio2's own sanity checks (what gulp2_sanity_check does) on a directory and prints
the failures as JSON, for comparison with roverlog's sanity check.

usage: gulp_sanity.py DIR
"""
import json
import sys
from collections import OrderedDict

from gulpio2 import sanity_utils as su
from gulpio2.fileio import GulpDirectory

# gulp2_sanity_check builds GulpDirectory(dir), whose constructor fails an assertion on
# duplicate ids before the duplicate check can run; build only what the checks use.
gd = GulpDirectory.__new__(GulpDirectory)
gd.output_dir = sys.argv[1]
gd.jpeg_decoder = None
gd.chunk_objs_lookup = OrderedDict(zip(gd._chunk_ids(), gd._chunks()))
print(json.dumps({
    "empty_meta": su.check_meta_file_size_larger_zero(gd),
    "empty_data": su.check_data_file_size_larger_zero(gd),
    "data_size": su.check_data_file_size(gd),
    "duplicate_ids": su.check_for_duplicate_ids(gd),
}))

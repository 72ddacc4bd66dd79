"""Reads an MCAP file with the `mcap` package (and `mcap-protobuf-support` for the protobuf
messages) and prints, as JSON, per topic: schema name and encoding, message encoding,
channel metadata, message count, log and publish times (ns), and per message the sha256 of
the image payload (`data`) and the image fields, the `LocationFix` and `Log` fields, or the
`value` of JSON samples. For tests/cli/export_mcap.rs.

    mcap_read.py FILE.mcap
"""
import hashlib
import json
import sys

from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory

out = {}
with open(sys.argv[1], "rb") as f:
    reader = make_reader(f)
    factory = DecoderFactory()
    for schema, channel, message in reader.iter_messages():
        decoded = None
        if channel.message_encoding == "protobuf":
            decoded = factory.decoder_for(channel.message_encoding, schema)(message.data)
        t = out.setdefault(channel.topic, {
            "schema": schema.name if schema else None,
            "schema_encoding": schema.encoding if schema else None,
            "encoding": channel.message_encoding,
            "metadata": dict(channel.metadata),
            "log_time": [], "publish_time": [], "payload_sha256": [], "fields": [], "values": [],
        })
        t["log_time"].append(message.log_time)
        t["publish_time"].append(message.publish_time)
        if channel.message_encoding == "json":
            t["values"].append(json.loads(message.data)["value"])
        elif schema.name in ("foxglove.CompressedImage", "foxglove.RawImage"):
            t["payload_sha256"].append(hashlib.sha256(decoded.data).hexdigest())
            fields = {"frame_id": decoded.frame_id, "sec": decoded.timestamp.seconds, "nsec": decoded.timestamp.nanos}
            if schema.name == "foxglove.RawImage":
                fields.update(width=decoded.width, height=decoded.height, encoding=decoded.encoding, step=decoded.step)
            else:
                fields.update(format=decoded.format)
            t["fields"].append(fields)
        elif schema.name == "foxglove.LocationFix":
            t["fields"].append({
                "frame_id": decoded.frame_id, "sec": decoded.timestamp.seconds, "nsec": decoded.timestamp.nanos,
                "latitude": decoded.latitude, "longitude": decoded.longitude, "altitude": decoded.altitude,
                "position_covariance": list(decoded.position_covariance),
                "position_covariance_type": decoded.position_covariance_type,
            })
        else:
            t["fields"].append({"name": decoded.name, "level": decoded.level, "message": decoded.message})
print(json.dumps(out))

"""Checks Iceberg manifest lists and manifests with fastavro against the Avro schemas of the Iceberg
table spec (format/spec.md: "Manifest Lists" -> manifest_file, "Manifests" -> manifest_entry and
data_file, format version 2), written here from the spec's tables, independently of Lakeport's code.

Usage: python iceberg_avro_check.py list:/path/snap.avro manifest:/path/m0.avro ...
Prints one JSON object per file (what was read) and exits non-zero at the first problem.
"""
import json
import sys

import fastavro
from fastavro.validation import validate_many


def required(fid, name, typ):
    return {"name": name, "type": typ, "field-id": fid}


def optional(fid, name, typ):
    return {"name": name, "type": ["null", typ], "default": None, "field-id": fid}


def int_map(fid, key_id, value_id, name, value_type):
    record = {"type": "record", "name": f"k{key_id}_v{value_id}", "fields": [required(key_id, "key", "int"), required(value_id, "value", value_type)]}
    return optional(fid, name, {"type": "array", "logicalType": "map", "items": record})


# Spec, "Manifest Lists": manifest_file, v2 column (v3-only first_row_id left out).
MANIFEST_FILE = {
    "type": "record",
    "name": "manifest_file",
    "fields": [
        required(500, "manifest_path", "string"),
        required(501, "manifest_length", "long"),
        required(502, "partition_spec_id", "int"),
        required(517, "content", "int"),
        required(515, "sequence_number", "long"),
        required(516, "min_sequence_number", "long"),
        required(503, "added_snapshot_id", "long"),
        required(504, "added_files_count", "int"),
        required(505, "existing_files_count", "int"),
        required(506, "deleted_files_count", "int"),
        required(512, "added_rows_count", "long"),
        required(513, "existing_rows_count", "long"),
        required(514, "deleted_rows_count", "long"),
        optional(507, "partitions", {
            "type": "array",
            "element-id": 508,
            "items": {
                "type": "record",
                "name": "r508",
                "fields": [
                    required(509, "contains_null", "boolean"),
                    optional(518, "contains_nan", "boolean"),
                    optional(510, "lower_bound", "bytes"),
                    optional(511, "upper_bound", "bytes"),
                ],
            },
        }),
        optional(519, "key_metadata", "bytes"),
    ],
}

# Spec, "Manifests": manifest_entry and data_file, v2 column; an unpartitioned spec's empty partition struct.
DATA_FILE = {
    "type": "record",
    "name": "r2",
    "fields": [
        required(134, "content", "int"),
        required(100, "file_path", "string"),
        required(101, "file_format", "string"),
        required(102, "partition", {"type": "record", "name": "r102", "fields": []}),
        required(103, "record_count", "long"),
        required(104, "file_size_in_bytes", "long"),
        int_map(108, 117, 118, "column_sizes", "long"),
        int_map(109, 119, 120, "value_counts", "long"),
        int_map(110, 121, 122, "null_value_counts", "long"),
        int_map(137, 138, 139, "nan_value_counts", "long"),
        int_map(125, 126, 127, "lower_bounds", "bytes"),
        int_map(128, 129, 130, "upper_bounds", "bytes"),
        optional(131, "key_metadata", "bytes"),
        optional(132, "split_offsets", {"type": "array", "element-id": 133, "items": "long"}),
        optional(135, "equality_ids", {"type": "array", "element-id": 136, "items": "int"}),
        optional(140, "sort_order_id", "int"),
        optional(143, "referenced_data_file", "string"),
    ],
}
MANIFEST_ENTRY = {
    "type": "record",
    "name": "manifest_entry",
    "fields": [
        required(0, "status", "int"),
        optional(1, "snapshot_id", "long"),
        optional(3, "sequence_number", "long"),
        optional(4, "file_sequence_number", "long"),
        required(2, "data_file", DATA_FILE),
    ],
}

MANIFEST_METADATA = ["schema", "schema-id", "partition-spec", "partition-spec-id", "format-version", "content"]


def fail(path, message):
    print(json.dumps({"file": path, "error": message}))
    sys.exit(1)


def field_ids(schema, prefix=""):
    """Every field's id by its dotted path, through records, arrays and unions."""
    found = {}

    def walk(node, where):
        if isinstance(node, list):
            for branch in node:
                walk(branch, where)
        elif isinstance(node, dict):
            if node.get("type") == "record":
                for f in node["fields"]:
                    path = f"{where}.{f['name']}" if where else f["name"]
                    found[path] = f.get("field-id")
                    walk(f["type"], path)
            elif node.get("type") == "array":
                if "element-id" in node:
                    found[f"{where}[]"] = node["element-id"]
                walk(node["items"], f"{where}[]")
            elif isinstance(node.get("type"), (dict, list)):
                walk(node["type"], where)

    walk(schema, prefix)
    return found


def check(kind, path):
    expected = MANIFEST_FILE if kind == "list" else MANIFEST_ENTRY
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        metadata = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in reader.metadata.items()}
        writer_schema = json.loads(metadata["avro.schema"])
        writer_records = list(reader)
    # The field ids the spec gives are the ones in the file's own schema, field for field.
    ids = field_ids(writer_schema)
    for where, fid in field_ids(expected).items():
        if ids.get(where) != fid:
            fail(path, f"field {where}: id {ids.get(where)!r} in the file, {fid} in the spec")
    extra = set(ids) - set(field_ids(expected))
    if extra:
        fail(path, f"fields not in the spec: {sorted(extra)}")
    if kind == "manifest":
        for key in MANIFEST_METADATA:
            if key not in metadata:
                fail(path, f"missing file metadata key {key!r}")
        if metadata["format-version"] != "2" or metadata["content"] != "data":
            fail(path, f"format-version {metadata['format-version']!r}, content {metadata['content']!r}")
        json.loads(metadata["schema"])
        if json.loads(metadata["partition-spec"]) != []:
            fail(path, "partition-spec is not the unpartitioned spec []")
    # Read again through the spec's schema (Avro schema resolution), and validate every record against it.
    with open(path, "rb") as f:
        records = list(fastavro.reader(f, reader_schema=fastavro.parse_schema(expected)))
    if len(records) != len(writer_records):
        fail(path, "the spec's schema reads another number of records")
    try:
        validate_many(records, fastavro.parse_schema(expected), raise_errors=True)
    except Exception as error:  # noqa: BLE001 - any validation failure is the answer
        fail(path, f"record does not validate: {error}")
    summary = {"file": path, "kind": kind, "records": len(records), "codec": metadata.get("avro.codec")}
    if kind == "list":
        summary["manifests"] = [r["manifest_path"] for r in records]
        summary["added_rows"] = sum(r["added_rows_count"] for r in records)
        summary["existing_rows"] = sum(r["existing_rows_count"] for r in records)
    else:
        summary["files"] = [r["data_file"]["file_path"] for r in records]
        summary["record_count"] = sum(r["data_file"]["record_count"] for r in records)
        summary["statuses"] = sorted({r["status"] for r in records})
        summary["bounds"] = sum(len(r["data_file"]["lower_bounds"] or []) for r in records)
    print(json.dumps(summary))


def main():
    if len(sys.argv) < 2:
        print("usage: iceberg_avro_check.py list:PATH|manifest:PATH ...", file=sys.stderr)
        sys.exit(2)
    for arg in sys.argv[1:]:
        kind, _, path = arg.partition(":")
        if kind not in ("list", "manifest"):
            fail(arg, "expected list:PATH or manifest:PATH")
        check(kind, path)


main()

"""The Iceberg bench's Python reader (bench/iceberg.ts runs it with the venv test/python.ts makes).

A real Iceberg scan through Lakeport's REST catalog, written against the Iceberg spec, not Lakeport's
code: GET /v1/config, load the table, read the metadata JSON at `metadata-location`, the current
snapshot's manifest list and its manifests (fastavro), then every live data file with pyarrow over
HTTP range requests. Its peers, in the same process and run, alternating: pyarrow reading the same
data files by the same URLs with the same token (no catalog steps: the fair peer, since both pay the
same transport and only the catalog's own calls differ), and pyarrow reading them from local disk.

Reads one JSON object on stdin: {base, client_id, client_secret, namespace, table, runs, local_files}.
Writes one JSON object on stdout: the per-run timings, the metadata steps' share, the checksums.
"""

import http.client
import io
import json
import sys
import time
import urllib.parse

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


class Http:
    """One keep-alive connection to Lakeport, with the bearer token; every request checked for its status."""

    def __init__(self, base, token=None):
        self.base = urllib.parse.urlsplit(base)
        self.conn = http.client.HTTPConnection(self.base.hostname, self.base.port)
        self.token = token
        self.connections = 0  # TCP connections opened: 1 a scan when the server keeps them alive

    def request(self, method, url, body=None, headers=None, expect=(200,)):
        parts = urllib.parse.urlsplit(url)
        if parts.netloc and parts.netloc != self.base.netloc:
            raise ValueError(f"{url} is not on {self.base.netloc}")
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = dict(headers or {})
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        if self.conn.sock is None:
            self.connections += 1
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status not in expect:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:300]!r}")
        return data

    def json(self, url):
        return json.loads(self.request("GET", url))

    def close(self):
        self.conn.close()


class HttpRangeFile(io.RawIOBase):
    """A remote file for pyarrow: each read is one Range request on the shared connection (size known from the manifest)."""

    def __init__(self, http_, url, size):
        self.http, self.url, self.size, self.pos = http_, url, size, 0
        self.requests = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=io.SEEK_SET):
        self.pos = offset if whence == io.SEEK_SET else self.pos + offset if whence == io.SEEK_CUR else self.size + offset
        return self.pos

    def read(self, n=-1):
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        self.requests += 1
        data = self.http.request("GET", self.url, headers={"range": f"bytes={self.pos}-{end - 1}"}, expect=(206,))
        if len(data) != end - self.pos:
            raise RuntimeError(f"{self.url}: asked for {end - self.pos} bytes, got {len(data)}")
        self.pos = end
        return data

    def readall(self):
        return self.read(-1)


def read_parquet(source, tally):
    """Every row group of one Parquet file, one at a time (pre_buffer: a row group's column chunks in one range)."""
    parquet = pq.ParquetFile(source, pre_buffer=True)
    for i in range(parquet.num_row_groups):
        table = parquet.read_row_group(i)
        tally["rows"] += table.num_rows
        tally["id_sum"] += pc.sum(table.column("id")).as_py() or 0
        tally["amount_sum"] += pc.sum(table.column("amount")).as_py() or 0.0


def new_tally():
    return {"rows": 0, "id_sum": 0, "amount_sum": 0.0, "files": 0, "range_requests": 0}


def scan_files(http_, files, tally):
    for f in files:
        remote = HttpRangeFile(http_, f["url"], f["size"])
        read_parquet(pa.PythonFile(remote, mode="r"), tally)
        tally["files"] += 1
        tally["range_requests"] += remote.requests


def avro_records(data):
    return list(fastavro.reader(io.BytesIO(data)))


def catalog_scan(args, token):
    """Config, load table, metadata JSON, manifest list, manifests; then the data files they name."""
    start = time.perf_counter()
    steps = {}

    def step(name):
        steps[name] = time.perf_counter() - start - sum(steps.values())

    http_ = Http(args["base"], token)
    try:
        catalog = args["base"] + "/iceberg"
        config = http_.json(f"{catalog}/v1/config?warehouse=lakeport")
        prefix = config.get("overrides", {}).get("prefix") or config.get("defaults", {}).get("prefix")
        step("config")
        namespace = urllib.parse.quote("\x1f".join(args["namespace"]), safe="")
        base = f"{catalog}/v1/{prefix}" if prefix else f"{catalog}/v1"
        loaded = http_.json(f"{base}/namespaces/{namespace}/tables/{urllib.parse.quote(args['table'], safe='')}")
        step("load table")
        metadata = http_.json(loaded["metadata-location"])
        step("metadata JSON")
        snapshot = next(s for s in metadata["snapshots"] if s["snapshot-id"] == metadata["current-snapshot-id"])
        manifests = [m for m in avro_records(http_.request("GET", snapshot["manifest-list"])) if m.get("content", 0) == 0]
        step("manifest list")
        files = []
        for manifest in manifests:
            for entry in avro_records(http_.request("GET", manifest["manifest_path"])):
                data_file = entry["data_file"]
                # status 2 is DELETED; content 0 is data (no delete files are expected from Lakeport).
                if entry["status"] != 2 and data_file.get("content", 0) == 0:
                    if data_file["file_format"].upper() != "PARQUET":
                        raise RuntimeError(f"unexpected format {data_file['file_format']}")
                    files.append({"url": data_file["file_path"], "size": data_file["file_size_in_bytes"], "rows": data_file["record_count"]})
        step("manifests")
        metadata_s = time.perf_counter() - start
        tally = new_tally()
        scan_files(http_, files, tally)
        if tally["rows"] != sum(f["rows"] for f in files):
            raise RuntimeError(f"read {tally['rows']} rows, the manifests say {sum(f['rows'] for f in files)}")
    finally:
        http_.close()
    return {**tally, "s": time.perf_counter() - start, "metadata_s": metadata_s, "steps": steps, "manifests": len(manifests), "connections": http_.connections}, files


def direct_scan(args, token, files):
    """The same data files by the same URLs and token, known beforehand: no catalog calls."""
    start = time.perf_counter()
    http_ = Http(args["base"], token)
    tally = new_tally()
    try:
        scan_files(http_, files, tally)
    finally:
        http_.close()
    return {**tally, "s": time.perf_counter() - start, "connections": http_.connections}


def local_scan(paths):
    start = time.perf_counter()
    tally = new_tally()
    for p in paths:
        read_parquet(p, tally)
        tally["files"] += 1
    return {**tally, "s": time.perf_counter() - start}


def main():
    args = json.load(sys.stdin)
    # An OAuth client-credentials token from Lakeport's token endpoint, once: both HTTP readers need it.
    start = time.perf_counter()
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": args["client_id"], "client_secret": args["client_secret"], "scope": "odata"})
    auth = Http(args["base"])
    token = json.loads(auth.request("POST", args["base"] + "/auth/token", body=form, headers={"content-type": "application/x-www-form-urlencoded"}))["access_token"]
    auth.close()
    token_s = time.perf_counter() - start

    runs = []
    files = None
    # A warm-up round (the first load also builds and stores the metadata files), then the measured rounds.
    for i in range(-1, args["runs"]):
        # Which HTTP reader goes first alternates, so neither always meets a warmer page cache or a quieter machine.
        if files is None or i % 2 == 0:
            catalog, files = catalog_scan(args, token)
            direct = direct_scan(args, token, files)
        else:
            direct = direct_scan(args, token, files)
            catalog, files = catalog_scan(args, token)
        local = local_scan(args["local_files"])
        for name, scan in (("direct", direct), ("local", local)):
            for key in ("rows", "id_sum"):
                if scan[key] != catalog[key]:
                    raise RuntimeError(f"{name} scan {key} {scan[key]} != catalog scan {catalog[key]}")
            if abs(scan["amount_sum"] - catalog["amount_sum"]) > 1e-6 * max(1.0, abs(catalog["amount_sum"])):
                raise RuntimeError(f"{name} scan amount sum {scan['amount_sum']} != catalog scan {catalog['amount_sum']}")
        if i >= 0:
            runs.append({"catalog": catalog, "direct": direct, "local": local})
            steps = ", ".join(f"{k} {v * 1000:.1f}" for k, v in catalog["steps"].items())
            print(f"  python run {i + 1}: catalog {catalog['s']:.2f} s (metadata {catalog['metadata_s'] * 1000:.1f} ms: {steps}; data {catalog['s'] - catalog['metadata_s']:.2f} s), direct over HTTP {direct['s']:.2f} s, local {local['s']:.2f} s", file=sys.stderr)
    json.dump({"token_s": token_s, "runs": runs, "pyarrow": pa.__version__, "fastavro": fastavro.__version__, "python": sys.version.split()[0]}, sys.stdout)


if __name__ == "__main__":
    main()

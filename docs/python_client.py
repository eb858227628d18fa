#!/usr/bin/env python3
"""A small Airlock client in Python, standard library only.

It opens a session, uploads a CSV, runs a pandas computation on it, makes a
matplotlib plot and downloads it, then tries a streamed tool call (skipped
when the server answers without text/event-stream) and closes the session.

    python3 docs/python_client.py --server http://127.0.0.1:8080 --key KEY \
        [--csv sales.csv] [--out DIR]

The key may also come from AIRLOCK_API_KEY, the server from AIRLOCK_URL.
Without --csv a small sales table is used. The CSV needs the columns
"region" and "sales".
"""

import argparse
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request

DEFAULT_CSV = "region,sales\nnorth,120\nsouth,80\nnorth,30\neast,55\nsouth,20\n"


class APIError(Exception):
    """An error answer of the API: HTTP status, error code, message, details."""

    def __init__(self, status, code, message, details=None, retry_after=None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.details, self.retry_after = details or {}, retry_after


class Airlock:
    """A minimal client of the Airlock HTTP API."""

    def __init__(self, base_url, key=None, timeout=300):
        self.base = base_url.rstrip("/")
        self.key = key
        self.timeout = timeout

    def request(self, method, path, body=None, content_type=None, accept="application/json"):
        """Send one request; return the open response (2xx) or raise APIError."""
        headers = {"Accept": accept}
        if self.key:
            headers["Authorization"] = "Bearer " + self.key
        data = None
        if body is not None:
            if isinstance(body, (bytes, bytearray)):
                data = bytes(body)
                headers["Content-Type"] = content_type or "application/octet-stream"
            else:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                err = {"code": "", "message": raw.decode(errors="replace")[:200]}
            retry = e.headers.get("Retry-After")
            raise APIError(e.code, err.get("code", ""), err.get("message", ""), err.get("details"),
                           int(retry) if retry and retry.isdigit() else None) from None

    def json(self, method, path, body=None):
        """Send a JSON request and decode the JSON answer (None for 204)."""
        with self.request(method, path, body) as res:
            raw = res.read()
        return json.loads(raw) if raw else None

    def info(self):
        return self.json("GET", "/v1/info")

    def create_session(self):
        return self.json("POST", "/v1/sessions", {})

    def delete_session(self, sid):
        self.json("DELETE", f"/v1/sessions/{sid}")

    def put_file(self, sid, path, data):
        with self.request("PUT", f"/v1/sessions/{sid}/files/{path}", data) as res:
            return json.loads(res.read())

    def run_python(self, sid, code):
        """Run code in the session; the answer holds the tool message and the result."""
        call = {"type": "function", "function": {"name": "run_python", "arguments": json.dumps({"code": code})}}
        return self.json("POST", f"/v1/sessions/{sid}/tool-calls", call)

    def download(self, url):
        """Download an artifact by the url its result gave."""
        with self.request("GET", url, accept="*/*") as res:
            return res.read()

    def stream_python(self, sid, code):
        """Ask for a streamed call. Yields (event, data) pairs, or returns
        None when the server answered a plain JSON result instead."""
        call = {"type": "function", "function": {"name": "run_python", "arguments": json.dumps({"code": code})}}
        res = self.request("POST", f"/v1/sessions/{sid}/tool-calls", call, accept="text/event-stream")
        ctype = res.headers.get("Content-Type", "")
        if not ctype.startswith("text/event-stream"):
            res.read()
            res.close()
            return None, ctype
        return sse_events(res), ctype


def sse_events(res):
    """Parse a text/event-stream body into (event, data) pairs."""
    event, data = "message", []
    with res:
        for raw in res:
            line = raw.decode().rstrip("\r\n")
            if not line:
                if data:
                    yield event, "\n".join(data)
                event, data = "message", []
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "event":
                    event = value
                elif field == "data":
                    data.append(value)


PANDAS = """
import pandas as pd
df = pd.read_csv('data.csv')
totals = df.groupby('region')['sales'].sum().sort_index()
for region, total in totals.items():
    print(f'{region}={int(total)}')
print(f'rows={len(df)}')
"""

PLOT = """
import matplotlib.pyplot as plt
ax = totals.plot.bar(title='sales by region')
ax.set_ylabel('sales')
plt.tight_layout()
plt.show()
"""

STREAM = """
import time
for i in range(3):
    print('tick', i, flush=True)
    time.sleep(0.2)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default=os.environ.get("AIRLOCK_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--key", default=os.environ.get("AIRLOCK_API_KEY"))
    ap.add_argument("--csv", help="CSV file with region and sales columns")
    ap.add_argument("--out", default=".", help="folder for the downloaded plot")
    args = ap.parse_args()

    api = Airlock(args.server, args.key)
    info = api.info()
    print(f"server: auth_required={info['auth_required']} sessions={info['sessions']}")
    csv = open(args.csv, "rb").read() if args.csv else DEFAULT_CSV.encode()

    session = api.create_session()
    sid = session["id"]
    print(f"session: {sid}")
    try:
        written = api.put_file(sid, "data.csv", csv)
        print(f"uploaded: {written['path']} {written['size']} bytes")

        res = api.run_python(sid, PANDAS)["result"]
        if res["status"] != "ok":
            sys.exit(f"pandas step failed: {res['status']}: {res['stderr'] or res.get('message', '')}")
        print(res["stdout"], end="")

        res = api.run_python(sid, PLOT)["result"]
        if res["status"] != "ok" or not res["artifacts"]:
            sys.exit(f"plot step failed: {res['status']}: {res['stderr']}")
        art = res["artifacts"][0]
        png = api.download(art["url"])
        ok = hashlib.sha256(png).hexdigest() == art["sha256"] and png.startswith(b"\x89PNG")
        path = os.path.join(args.out, "sales_by_region.png")
        with open(path, "wb") as f:
            f.write(png)
        print(f"plot: {art['mime']} {len(png)} bytes sha256_ok={ok} saved={path}")

        events, ctype = api.stream_python(sid, STREAM)
        if events is None:
            print(f"stream: skipped (the server answered {ctype or 'no content type'}, not text/event-stream)")
        else:
            n = 0
            for event, data in events:
                n += 1
                print(f"stream: {event} {data[:80]}")
            print(f"stream: {n} events")
    except APIError as e:
        sys.exit(f"airlock: {e} details={e.details} retry_after={e.retry_after}")
    finally:
        api.delete_session(sid)
    print("session: closed")
    try:
        api.run_python(sid, "1")
    except APIError as e:
        print(f"after close: {e.status} {e.code}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A stand-in for the node's data plane, for the pod-side GPU check: one pod, whose view run.sh
sets. It replaces the Java member (the GPU machine has no Java) and decides nothing by itself
except what POST demand does (onDemand).

  python3 standin.py serve NS/NAME PORTFILE   serves on 127.0.0.1, a free port written to PORTFILE
  python3 standin.py set URL JSON             merges JSON into the pod's view; every watch sees it
  python3 standin.py count URL METHOD         how many METHOD .../demand requests came
  python3 standin.py await URL METHOD N SECS  waits until N of them came; exit 1 after SECS
  python3 standin.py report URL               the library's last compute report (JSON), or {}

The library's endpoints under /v1/namespaces/NS/pods/NAME: GET (the view), POST and DELETE
demand, POST compute (the compute limit's report, kept), GET processes (the member's host PIDs of
the pod's processes: {"namespace", "name", "gpu", "hostPids", "smPercent"}, as run.sh sets them with
the control keys "hostPids" and "smPercent"; on the GPU machine there is no container, so a
process's host PID is its PID), GET watch (Server-Sent Events, close-delimited: the view at once and at each change,
a ':' heartbeat every 15 s). Control: POST /control (a JSON object; the key "onDemand" is
"ready" for Hibernation -> Ready at position 1 on POST demand, anything else for no change),
GET /control ({"view": ..., "demands": {"POST": n, "DELETE": n}}).
"""
import json
import os
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Condition()
version = 0
demands = {"POST": 0, "DELETE": 0}
reports = []  # the library's POST .../compute bodies
on_demand = "ready"
processes = {"hostPids": [], "smPercent": None}
view = {}
pod_path = ""


def change(fields):
    global version, on_demand
    with lock:
        on_demand = fields.pop("onDemand", on_demand)
        for key in ("hostPids", "smPercent"):
            if key in fields:
                processes[key] = fields.pop(key)
        view.update(fields)
        version += 1
        lock.notify_all()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, kind="application/json"):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def not_found(self):
        self.answer(404, {"type": "about:blank", "title": "Not Found", "status": 404,
                          "detail": "no such pod or route: " + self.path},
                    "application/problem+json")

    def do_GET(self):
        if self.path == "/control":
            with lock:
                self.answer(200, {"view": view, "demands": demands, "reports": reports})
        elif self.path == pod_path:
            with lock:
                self.answer(200, view)
        elif self.path == pod_path + "/watch":
            self.watch()
        elif self.path == pod_path + "/processes":
            ns, name = pod_path.split("/")[3], pod_path.split("/")[5]
            with lock:
                gpu = view.get("gpu")
                self.answer(200, {"namespace": ns, "name": name, "gpu": gpu,
                                  "hostPids": processes["hostPids"] if gpu else [],
                                  "smPercent": processes["smPercent"]})
        else:
            self.not_found()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/control":
            change(json.loads(body))
            self.answer(200, {"ok": True})
        elif self.path == pod_path + "/demand":
            self.demand("POST")
        elif self.path == pod_path + "/compute":
            with lock:
                reports.append(json.loads(body))
                self.answer(200, view)
        else:
            self.not_found()

    def do_DELETE(self):
        if self.path == pod_path + "/demand":
            self.demand("DELETE")
        else:
            self.not_found()

    def demand(self, method):
        if method == "DELETE":
            change({"state": "Hibernation", "gpu": None, "runningSeconds": None})
        elif on_demand == "ready" and view["state"] == "Hibernation":
            change({"state": "Ready", "queuePosition": 1, "waitingSeconds": 0})
        with lock:
            demands[method] += 1
            lock.notify_all()
            self.answer(200, view)

    def watch(self):
        # The head and the first event in one write: the TCP stack may join them anyway, and a
        # client must read the event it already has without waiting for more.
        chunk = "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n" \
                "Connection: close\r\n\r\n"
        seen = -1
        try:
            while True:
                with lock:
                    if version == seen:
                        lock.wait(15)
                    chunk += ":\n\n" if version == seen else "data: %s\n\n" % json.dumps(view)
                    seen = version
                self.wfile.write(chunk.encode())
                chunk = ""
                self.wfile.flush()
        except OSError:
            pass  # the library hung up


def serve(pod, portfile):
    global pod_path
    ns, name = pod.split("/")
    pod_path = "/v1/namespaces/%s/pods/%s" % (ns, name)
    view.update({"namespace": ns, "name": name, "uid": "0f5c0000-0000-4000-8000-000000000001",
                 "node": "gpu-check", "policy": "share-pool", "state": "Hibernation",
                 "requests": {"core": 50, "memory": 25}, "limits": {"core": 50, "memory": 25},
                 "gpu": None, "queuePosition": None, "waitingSeconds": None,
                 "runningSeconds": None, "conditions": [], "events": [], "checkpoint": None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


def control(url, body=None):
    req = urllib.request.Request(url + "/control", data=body and body.encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def main(argv):
    cmd = argv[1]
    if cmd == "serve":
        serve(argv[2], argv[3])
    elif cmd == "set":
        control(argv[2], argv[3])
    elif cmd == "count":
        print(control(argv[2])["demands"][argv[3]])
    elif cmd == "report":
        got = control(argv[2])["reports"]
        print(json.dumps(got[-1] if got else {}))
    elif cmd == "await":
        end = time.monotonic() + float(argv[5])
        while control(argv[2])["demands"][argv[3]] < int(argv[4]):
            if time.monotonic() > end:
                return 1
            time.sleep(0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

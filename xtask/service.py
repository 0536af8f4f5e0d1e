"""The service binary run on a fresh SQLite data directory with the
repository's connectors: what xtask's Python steps (fuzz.py,
client_test.py) drive."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    """`binary serve` on 127.0.0.1 with `connectors` loaded, the scheduled
    CVE loads off, and `settings` (CAIRN_* variables) on top; started and
    answering `/health` when the constructor returns. `data` is a scratch
    directory holding the database and `log`. `start_secs` is how long it
    may take to answer."""

    def __init__(self, binary, connectors, prefix, start_secs=120, **settings):
        self.data = tempfile.mkdtemp(prefix=prefix)
        port = free_port()
        self.base = "http://127.0.0.1:%d" % port
        self.log = os.path.join(self.data, "service.log")
        env = dict(
            os.environ,
            CAIRN_DATA_DIR=self.data,
            CAIRN_LISTEN="127.0.0.1:%d" % port,
            CAIRN_DATABASE_URL="",
            CAIRN_CONNECTORS_DIR=connectors,
            CAIRN_VULN_SCHEDULE="false",
        )
        env.update(settings)
        with open(self.log, "w") as out:
            self.process = subprocess.Popen([binary, "serve"], env=env, stdout=out, stderr=out)
        self._wait(start_secs)

    def _wait(self, start_secs):
        # Failures print the log's end: a CI machine's scratch directory is
        # gone when its output is read.
        deadline = time.time() + start_secs
        while time.time() < deadline:
            if self.process.poll() is not None:
                sys.exit("the service exited at start; the end of %s:\n%s"
                         % (self.log, self.log_tail()))
            try:
                urllib.request.urlopen(self.base + "/health", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        sys.exit("the service did not answer /health within %d s; the end of %s:\n%s"
                 % (start_secs, self.log, self.log_tail()))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def log_tail(self, chars=4000):
        with open(self.log) as f:
            return f.read()[-chars:]

    def remove(self):
        shutil.rmtree(self.data, ignore_errors=True)

"""Worker code for tests that play a compromised sandbox worker.

`FRAMES` runs as plain Python inside the confined worker (the test-only path, a session started
with `_allow_unsafe_exec_for_tests`): `send` writes frames on the pipe to the parent (fd 1) and
`recv` reads the parent's answers (fd 0), as code whose language sandbox fell could.
"""

FRAMES = """
import json, os, struct
def send(obj=None, raw=None, kind=74, size=None):
    data = raw if raw is not None else json.dumps(obj).encode()
    os.write(1, struct.pack('>IB', len(data) if size is None else size, kind) + data)
def recv():
    head = b''
    while len(head) < 5:
        head += os.read(0, 5 - len(head))
    size, _ = struct.unpack('>IB', head)
    body = b''
    while len(body) < size:
        body += os.read(0, size - len(body))
    return json.loads(body)
"""

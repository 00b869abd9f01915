"""The preloaded Python: the PyTorch runtime's script, run with `--preload`, imports
torch, torchvision and the rest once, then forks one script process per measurement,
so that a run of many configs and repeats pays `import torch` (seconds) once, not once
a measurement. loaderbench sends each request over the socket that is this process's
stdin: a `fork` line carrying the new process's stdin, stdout and stderr (SCM_RIGHTS).
The forked process leads a process group of its own, as a script loaderbench starts
does, and returns from `serve` into the script's `main`.

A forked script shares its pages with this process, which would change its memory
figures (loaderbench reads proportional set sizes): a fresh script's count every page
of torch it touched in full. So, before the script reads its request, each side undoes
the sharing: the script maps the library pages this process had resident
(`MADV_POPULATE_READ`; Linux copies only the anonymous mappings' page table entries at
fork), and this process takes its own copy of every private page it had written
(`MADV_POPULATE_WRITE`) and unmaps its read-only file pages. The script then holds its
pages alone, as a fresh one does. On a kernel without these (before Linux 5.14) this
process exits before serving, and loaderbench starts every script afresh.

This process reports on the socket a request came from, one JSON object a line:
`preloaded` once it serves, `forked` with each new pid, `exited` with the pid and its
wait status, and `released` once loaderbench has killed the pid's group and the process
is reaped (or at once, for a pid it no longer has): until then it stays a zombie, so
that its pid (and group id) cannot be given to another process while loaderbench may
still signal it. When the socket closes (loaderbench ended), it kills every process
group it has not released and exits.

Shared: a process that starts many loaderbench processes (tune's and `--recommend`'s
rounds, the test suite) starts one preloaded Python with a listening socket as its stdin
and tells its children where it is (`LOADERBENCH_PRELOADED`); each connection is then
served as the socket above, a fork request carrying the working directory and
temporary directory of the loaderbench process asking, and the scripts a connection
forked are killed when it closes. It lives until its owner kills it.
"""

import ctypes
import json
import mmap
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import time

PAGE = os.sysconf("SC_PAGE_SIZE")

# madvise advice: drop a range's page table entries; map its pages as a read would
# (Linux 5.14); map them as a write would, copying any shared page (Linux 5.14).
MADV_DONTNEED = 4
MADV_POPULATE_READ = 22
MADV_POPULATE_WRITE = 23

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def mappings():
    """This process's mappings from /proc/self/smaps: (start, end, permissions, path,
    kB of anonymous pages) each."""
    found = []
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if fields[0] == "Anonymous:":
                found[-1][4] = int(fields[1])
            elif "-" in fields[0] and not fields[0].endswith(":"):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                path = fields[5] if len(fields) > 5 else ""
                found.append([start, end, fields[1], path, 0])
    return found


def present_runs(pagemap, start, end):
    """The runs of pages from `start` to `end` that are in this process's page tables:
    (address, bytes) each, from the present bit of /proc/self/pagemap."""
    pagemap.seek(start // PAGE * 8)
    data = pagemap.read((end - start) // PAGE * 8)
    entries = struct.unpack(f"{len(data) // 8}Q", data)
    runs = []
    first = None
    for index, entry in enumerate(entries + (0,)):
        if entry >> 63:
            first = index if first is None else first
        elif first is not None:
            runs.append((start + first * PAGE, (index - first) * PAGE))
            first = None
    return runs


def advise(runs, advice):
    for address, length in runs:
        if LIBC.madvise(address, length, advice) != 0:
            raise OSError(ctypes.get_errno(), f"madvise({advice}) failed")


def resident_library_pages():
    """The runs of file-backed pages this process has mapped, which a forked script
    maps again."""
    with open("/proc/self/pagemap", "rb") as pagemap:
        return [
            run
            for start, end, permissions, path, _ in mappings()
            if path.startswith("/") and "r" in permissions
            for run in present_runs(pagemap, start, end)
        ]


def unshare():
    """Stops sharing pages with the script just forked: a copy of every present page of
    the private writable mappings, and no entries for read-only file mappings that hold
    no page of their own (their pages come back from the page cache when touched)."""
    with open("/proc/self/pagemap", "rb") as pagemap:
        for start, end, permissions, path, anonymous in mappings():
            if permissions[3] != "p" or path.startswith("[v"):
                continue
            if "w" in permissions:
                advise(present_runs(pagemap, start, end), MADV_POPULATE_WRITE)
            elif path.startswith("/") and anonymous == 0:
                advise([(start, end - start)], MADV_DONTNEED)


def check_kernel():
    """Fails where the kernel lacks the advice `unshare` and the scripts need."""
    page = mmap.mmap(-1, PAGE)
    byte = ctypes.c_char.from_buffer(page)
    try:
        advise([(ctypes.addressof(byte), PAGE)], MADV_POPULATE_WRITE)
        advise([(ctypes.addressof(byte), PAGE)], MADV_POPULATE_READ)
    finally:
        del byte
        page.close()


def wait_status(info):
    """A waitid result as the raw wait status loaderbench's ExitStatus reads."""
    if info.si_code == os.CLD_EXITED:
        return (info.si_status & 0xFF) << 8
    dumped = 0x80 if info.si_code == os.CLD_DUMPED else 0
    return info.si_status | dumped


def serve(emit):
    """Serves fork requests until loaderbench closes the socket that is this process's
    stdin (then exits); returns only in a forked process, whose stdin, stdout and stderr
    are then the ones loaderbench sent. Where stdin is a listening socket (the shared
    preloaded Python), each connection is served as that socket would be, and the
    scripts a connection forked are killed when it closes; this process then lives until
    it is killed."""
    try:
        check_kernel()
        runs = resident_library_pages()
    except OSError as err:
        emit(kind="not_preloaded", reason=str(err))
        os._exit(1)
    stdin = socket.socket(fileno=0)
    listener = stdin if stdin.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) else None
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    # Each connection's bytes not yet read as a line, and its scripts (pid -> whether
    # the exit was reported); every script listed is unreleased.
    connections = {}
    if listener is None:
        connections[stdin] = Connection(stdin)
    else:
        listener.setblocking(False)
    for connection in connections.values():
        connection.report(kind="preloaded")
    while True:
        waiting = [wake_read, *connections] + ([listener] if listener else [])
        try:
            readable, _, _ = select.select(waiting, [], [])
        except InterruptedError:
            readable = []
        if wake_read in readable:
            os.read(wake_read, 4096)
        for connection in connections.values():
            connection.report_exits()
        if listener is not None and listener in readable:
            try:
                accepted, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                accepted = None
            if accepted is not None:
                accepted.setblocking(True)
                connections[accepted] = Connection(accepted)
                connections[accepted].report(kind="preloaded")
        for sock in [sock for sock in readable if sock in connections]:
            connection = connections[sock]
            try:
                data, fds, _, _ = socket.recv_fds(sock, 4096, 3)
            except OSError:
                data, fds = b"", []
            if not data:
                connection.close()
                del connections[sock]
                if listener is None:
                    os._exit(0)
                continue
            connection.take(data, fds)
            for request in connection.requests():
                others = [listener, wake_read, wake_write, *connections]
                if connection.serve(request, others, runs):
                    return


class Connection:
    """One loaderbench process's requests and the scripts it had forked."""

    def __init__(self, sock):
        self.sock = sock
        self.pending = b""
        self.fds = []
        self.children = {}

    def report(self, **fields):
        try:
            self.sock.sendall((json.dumps(fields) + "\n").encode())
        except OSError:
            pass  # It closed: what it asked for is killed when it is read as closed.

    def report_exits(self):
        for pid, reported in list(self.children.items()):
            if reported:
                continue
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None:
                self.children[pid] = True
                self.report(kind="exited", pid=pid, status=wait_status(info))

    def take(self, data, fds):
        """Adds what was read: bytes, and the descriptors that came with a fork line."""
        self.pending += data
        self.fds += fds

    def requests(self):
        """The whole request lines read so far, each once."""
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            yield line.decode()

    def serve(self, request, others, runs):
        """Does what `request` asks; True in a script just forked."""
        command, _, argument = request.partition(" ")
        if command == "fork":
            fds, self.fds = self.fds[:3], self.fds[3:]
            return self.fork(fds, json.loads(argument or "{}"), others, runs)
        if command == "release":
            # A pid not (or no longer) ours is answered too: the caller waits for it.
            pid = int(argument)
            if pid in self.children:
                kill_group(pid)
                os.waitpid(pid, 0)
                del self.children[pid]
            self.report(kind="released", pid=pid)
        return False

    def fork(self, fds, place, others, runs):
        """Forks a script with `fds` as its stdin, stdout and stderr, working in
        `place`; True in the script."""
        if len(fds) != 3:
            # loaderbench, seeing no `forked`, starts the scripts afresh.
            for fd in fds:
                os.close(fd)
            return False
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            become_script(others, fds, place, runs)
            return True
        for fd in fds:
            os.close(fd)
        # The script leads its group from here on, whichever side sets it first.
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        self.children[pid] = False
        try:
            unshare()
        except OSError:
            # loaderbench, seeing no `forked`, starts the scripts afresh.
            kill_group(pid)
            os._exit(1)
        self.report(kind="forked", pid=pid)
        return False

    def close(self):
        """Kills and reaps every script not released, and closes the socket."""
        for pid in self.children:
            kill_group(pid)
            os.waitpid(pid, 0)
        self.children = {}
        self.sock.close()


def kill_group(pid):
    """SIGKILL to group `pid`, then a wait (at most 2 s) until none of its processes runs
    any more, each gone or a zombie: a DataLoader worker with much memory resident takes
    tens of milliseconds to free it, and none may outlive the loaderbench that exits
    once its script is released."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 2.0
    while group_runs(pid) and time.monotonic() < deadline:
        time.sleep(0.002)


def group_runs(group):
    """True while a process of `group` is neither gone nor a zombie."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == group and fields[0] not in (b"Z", b"X", b"x"):
            return True
    return False


def become_script(others, fds, place, runs):
    """In the forked process: a process group of its own, the signal handling, standard
    streams, working directory and temporary directory of a script loaderbench starts,
    and the libraries' pages mapped."""
    os.setpgid(0, 0)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for other in others:
        if other is None:
            continue
        if isinstance(other, int):
            os.close(other)
        else:
            other.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    if "cwd" in place:
        os.chdir(place["cwd"])
    if "tmpdir" in place:
        os.environ["TMPDIR"] = place["tmpdir"]
        tempfile.tempdir = None
    try:
        advise(runs, MADV_POPULATE_READ)
    except OSError:
        pass  # A library unmapped since: its pages are no longer this process's.
    # Python's own random module reseeds itself in a forked child; numpy's legacy
    # global generator does not, and a fresh process seeds it from the OS.
    import numpy

    numpy.random.seed()

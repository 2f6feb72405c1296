"""Issue 39, case 2: tefq writes only what it owns. The atomic write renamed its temporary file
over whatever --out, --metrics or `tefq facts --out` named: a character device, a FIFO (its reader
got nothing and hung), a symlink to /proc/self/fd/1 each became a regular file, with exit 0 (run
as root, `--out /dev/null` replaced the system's /dev/null). Now (tefq.io.atomic) a regular file or
a missing path is replaced atomically, a link is followed to its target (the link stays), a
device, FIFO or socket is written in place, and every output path is checked before the run.

These tests make their own FIFOs and links; the one test that writes to a real device does it in
a child that first drops root (so a rename over /dev/null could not happen even if the code tried)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tefq.errors import TefqError
from tefq.io.atomic import atomic_open, check_writable

pytestmark = pytest.mark.reliability

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
UC1 = os.path.join(ROOT, "usecases", "uc1.tef")
STREAM = os.path.join(ROOT, "tests", "data", "streams", "basic.tsv")
TEFQ = [sys.executable, "-m", "tefq"]


def run_uc1(*extra: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*TEFQ, "run", UC1, "--engine", "oracle", "--quiet", "--stream", STREAM, *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, **kwargs)


def expected_rows() -> str:
    proc = run_uc1()
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_regular_file_is_replaced_whole_and_keeps_its_mode(tmp_path) -> None:
    out = tmp_path / "r.csv"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    inode = os.stat(out).st_ino
    with atomic_open(str(out)) as f:
        f.write("new\n")
        assert out.read_text() == "old\n"  # not visible before the block ends
    assert out.read_text() == "new\n" and os.stat(out).st_ino != inode
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640 and os.listdir(tmp_path) == ["r.csv"]


@pytest.mark.parametrize("target_exists", [True, False])
def test_a_symlink_is_followed_and_stays_a_link(tmp_path, target_exists) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "r.csv"
    if target_exists:
        target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with atomic_open(str(link)) as f:
        f.write("new\n")
    assert link.is_symlink() and os.readlink(link) == str(target) and target.read_text() == "new\n"
    assert sorted(os.listdir(tmp_path)) == ["link.csv", "real"] and os.listdir(tmp_path / "real") == ["r.csv"]


def test_a_directory_is_refused(tmp_path) -> None:
    with pytest.raises(TefqError, match="it is a directory"):
        with atomic_open(str(tmp_path)) as f:
            f.write("x")


def read_fifo(path: str) -> subprocess.Popen:
    return subprocess.Popen(["cat", path], stdout=subprocess.PIPE, text=True)


def test_a_fifo_given_as_out_gets_the_rows_and_stays_a_fifo(tmp_path) -> None:
    fifo = str(tmp_path / "rows.fifo")
    os.mkfifo(fifo)
    reader = read_fifo(fifo)
    try:
        proc = run_uc1("--out", fifo)
        got, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()
    assert proc.returncode == 0, proc.stderr
    assert got == expected_rows() and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_to_standard_output_writes_there_and_stays_a_link(tmp_path) -> None:
    link = tmp_path / "stdout.csv"
    link.symlink_to("/proc/self/fd/1")
    proc = run_uc1("--out", str(link))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected_rows() and link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


def test_facts_out_and_metrics_follow_links_too(tmp_path) -> None:
    (tmp_path / "real").mkdir()
    links = {}
    for name in ("facts.csv", "m.json"):
        links[name] = tmp_path / name
        links[name].symlink_to(tmp_path / "real" / name)
    proc = subprocess.run([*TEFQ, "facts", UC1, "--stream", STREAM, "--quiet", "--out", str(links["facts.csv"])],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    proc = run_uc1("--metrics", str(links["m.json"]), "--out", str(tmp_path / "rows.csv"))
    assert proc.returncode == 0, proc.stderr
    assert all(link.is_symlink() for link in links.values())
    assert (tmp_path / "real" / "facts.csv").read_text().startswith("fact,")
    assert '"events_in"' in (tmp_path / "real" / "m.json").read_text()


DEVICE_CHILD = """
import os, stat, sys
from tefq.errors import TefqError
from tefq.io.atomic import atomic_open
if os.getuid() == 0:  # from here on a rename over a device fails, as it must never even be tried
    os.setgid(65534)
    os.setuid(65534)
before = os.stat("/dev/null")
with atomic_open("/dev/null") as f:
    f.write("through it, not over it\\n")
after = os.stat("/dev/null")
print("null", stat.S_ISCHR(after.st_mode), (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev))
try:
    with atomic_open("/dev/full") as f:
        f.write("x" * 100000)
except TefqError as e:
    print("full", e.render())
"""


def test_a_device_is_written_through_never_replaced() -> None:
    proc = subprocess.run([sys.executable, "-c", DEVICE_CHILD], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "null True True" in proc.stdout
    assert "full /dev/full: error: cannot write the output: No space left on device" in proc.stdout


@pytest.fixture
def read_only_dir(tmp_path) -> Iterator[str]:
    """A directory no file can be made in: a read-only tmpfs when root may mount one (root ignores
    permission bits), else mode 0555."""
    path = tmp_path / "ro"
    path.mkdir()
    mounted = os.getuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
                                                  capture_output=True).returncode == 0
    if not mounted:
        if os.getuid() == 0:
            pytest.skip("root without mount: no directory is read-only to it")
        os.chmod(path, 0o555)
    try:
        yield str(path)
    finally:
        if mounted:
            subprocess.run(["umount", str(path)], check=True)
        else:
            os.chmod(path, 0o755)


@pytest.mark.parametrize("option", ["--metrics", "--out"])
def test_an_unwritable_output_fails_before_the_run(read_only_dir, option) -> None:
    target = os.path.join(read_only_dir, "x.json")
    proc = run_uc1(option, target)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"{target}: error: cannot write {option} here: Read-only file "
                                                f"system ({read_only_dir})"] or "Permission denied" in proc.stderr
    assert proc.stdout == ""  # refused before any row was computed


def test_a_missing_output_directory_fails_before_the_run(tmp_path) -> None:
    target = str(tmp_path / "no" / "m.json")
    proc = run_uc1("--metrics", target)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{target}: error: cannot write --metrics here: No such file or directory" in proc.stderr


def test_check_writable_takes_missing_directory_targets_and_special_files(tmp_path) -> None:
    check_writable(str(tmp_path / "a" / "b") + "/", "--out", directory_target=True)
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    check_writable(str(fifo), "--out")  # no reader yet: still writable, and no blocking open
    check_writable(None, "--out")
    check_writable("-", "--out")
    assert sorted(os.listdir(tmp_path)) == ["f"]

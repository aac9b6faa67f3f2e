"""Inputs and outputs that are not regular files (issue 33): the one input reader and the in-place writer.

Device nodes are made in tmp_path (os.mknod, root only: skipped otherwise), never in the real /dev; a
descriptor by name is tested through /dev/fd/N of a pipe this test opens (the name is mapped to the
descriptor, never opened).
"""

from __future__ import annotations

import gzip
import os
import stat
import threading

import pytest

from roofline.core.errors import RooflineError
from roofline.core.fileio import open_input, output_kind, read_bytes, std_descriptor, write_files_atomic


def node(tmp_path, name: str, minor: int):
    if os.geteuid() != 0:
        pytest.skip("os.mknod of a character device needs root")
    p = tmp_path / name
    os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, minor))  # 1/3: null, 1/7: full (Linux devices.txt)
    return p


def test_a_null_device_is_written_in_place_and_stays_a_device(tmp_path):
    p = node(tmp_path, "out.json", 3)
    write_files_atomic([(p, b"{}\n"), (tmp_path / "b.json", b"[]\n")])
    assert p.is_char_device()  # not replaced by a regular file
    assert (tmp_path / "b.json").read_bytes() == b"[]\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["b.json", "out.json"]  # no temporary file left


def test_a_full_device_fails_in_one_line_and_renames_nothing(tmp_path):
    p = node(tmp_path, "full.json", 7)
    (tmp_path / "b.json").write_text("old")
    with pytest.raises(RooflineError, match="full.json: cannot write: No space left on device"):
        write_files_atomic([(tmp_path / "b.json", b"new"), (p, b"x" * 10)])
    assert p.is_char_device() and (tmp_path / "b.json").read_text() == "old"  # all or nothing
    assert sorted(x.name for x in tmp_path.iterdir()) == ["b.json", "full.json"]


def test_a_fifo_without_a_reader_fails_at_once_and_with_one_it_is_written(tmp_path):
    p = tmp_path / "pipe"
    os.mkfifo(p)
    with pytest.raises(RooflineError, match="no process is reading the fifo"):
        write_files_atomic([(p, b"abc")])
    got: list[bytes] = []
    ready = threading.Event()

    want = len(b"abc" * 100_000)

    def read() -> None:
        import time

        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # opened first, so the writer finds a reader
        ready.set()
        chunks, size, deadline = [], 0, time.monotonic() + 10
        while size < want and time.monotonic() < deadline:  # before the writer opens, a read finds no data
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                chunk = b""
            if not chunk:
                time.sleep(0.005)
            chunks.append(chunk)
            size += len(chunk)
        os.close(fd)
        got.append(b"".join(chunks))

    t = threading.Thread(target=read)
    t.start()
    ready.wait(5)
    write_files_atomic([(p, b"abc" * 100_000)])  # more than a pipe buffer: the write blocks until read
    t.join(5)
    assert got == [b"abc" * 100_000] and stat.S_ISFIFO(os.lstat(p).st_mode)


def test_a_descriptor_by_name_is_written_to_that_descriptor(tmp_path):
    r, w = os.pipe()
    try:
        assert std_descriptor(f"/dev/fd/{w}") == w and std_descriptor("/dev/stdout") == 1
        assert output_kind(f"/proc/self/fd/{w}") == "fd"
        write_files_atomic([(f"/dev/fd/{w}", b"hello")])
        assert os.read(r, 100) == b"hello"
    finally:
        os.close(r)
        os.close(w)
    assert std_descriptor(tmp_path / "x") is None and std_descriptor("/dev/fd/x") is None


def test_symlinks_are_refused_naming_the_link_and_its_target(tmp_path):
    # the symlink rule (issue 53): an output path that is a symbolic link is never followed, whatever it
    # points to (a file it would rewrite, nothing, a folder): one line naming the link and its target
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    # (a long target path is shortened in the middle, as every shown path)
    with pytest.raises(RooflineError, match=r"link.json: cannot write: a symbolic link to '.*\(links are not followed"):
        write_files_atomic([(link, b"new")])
    assert link.is_symlink() and real.read_text() == "old"  # neither the link nor its target touched
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere" / "x.json")
    with pytest.raises(RooflineError, match="a symbolic link to"):
        write_files_atomic([(dangling, b"x")])
    (tmp_path / "d").mkdir()
    to_dir = tmp_path / "to_dir"
    to_dir.symlink_to(tmp_path / "d")
    with pytest.raises(RooflineError, match="a symbolic link to"):
        write_files_atomic([(to_dir, b"x")])
    assert dangling.is_symlink() and to_dir.is_symlink() and not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("kind", ["fifo", "dir", "zero"])
def test_the_input_reader_refuses_what_is_not_a_regular_file_at_once(tmp_path, kind):
    p = tmp_path / "in.json"
    if kind == "fifo":
        os.mkfifo(p)  # opened without blocking: no writer needed to refuse it
    elif kind == "dir":
        p.mkdir()
    else:
        p = node(tmp_path, "in.json", 5)
    want = {"fifo": r"a fifo \(named pipe\)", "dir": "a directory", "zero": "a character device"}[kind]
    with pytest.raises(RooflineError, match=f"in.json: cannot read: {want}, not a regular file"):
        read_bytes(p)


def test_the_input_limit_counts_decompressed_bytes_while_streaming(tmp_path, monkeypatch):
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(b" " * 100_000))  # about 100 bytes on disk, 100,000 decompressed
    monkeypatch.setenv("ROOFLINE_MAX_INPUT_BYTES", "50000")
    with open_input(p, decompress=True) as f, pytest.raises(RooflineError, match="after decompression"):
        while f.read(4096):
            pass
    monkeypatch.setenv("ROOFLINE_MAX_INPUT_BYTES", "200000")
    with open_input(p, decompress=True) as f:
        assert len(f.read()) == 100_000
    with open_input(p) as f:  # without decompress: the file's own bytes
        assert f.read(2) == b"\x1f\x8b"

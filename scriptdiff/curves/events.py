"""TensorBoard event files, record by record, each record's checksums verified.

An event file is a stream of records, each

  length     8 bytes, little-endian
  len_crc    4 bytes: the masked CRC32C of the 8 length bytes
  data       `length` bytes: one serialized `Event` protocol buffer
  data_crc   4 bytes: the masked CRC32C of the data

TensorBoard's own loader stops at the first record it cannot read and says nothing (it is
made to follow files that are still being written), so one flipped byte in record 18 of 100
made a run of 17 steps that compared "equal". Here a record is used only when both of its
checksums match:

  - data that does not match its checksum (the length did): that record is skipped, and the
    records after it are still read, each having checksums of its own;
  - a length that does not match its checksum, or a file that ends inside a record: where
    the next record starts cannot be trusted, so the rest of the file is not read.

Either way the file is *damaged*: one line (`Damage.message`) names the first record that
failed, its byte offset and how many failed; the side keeps what was read, and the verdict
is never "equal" (docs/curves.md). The CRC32C is google-crc32c's (the `tensorboard` extra).
"""
from __future__ import annotations

import struct

from .. import budget

_MASK_DELTA = 0xA282EAD8


class Damage:
    """What went wrong in one file: the first damaged record and how many there were."""

    def __init__(self):
        self.count = 0
        self.sound = 0  # records whose checksums matched
        self.first: str | None = None
        self.stopped = False  # the rest of the file was not read

    def add(self, index: int, offset: int, why: str, stop: bool = False) -> None:
        self.count += 1
        if self.first is None:
            self.first = f"record {index:,} at byte {offset:,}: {why}"
        self.stopped = self.stopped or stop

    def refuse(self, index: int, offset: int, why: str) -> None:
        """A record whose checksums matched but whose content is not an event."""
        self.sound -= 1
        self.add(index, offset, why)

    def message(self) -> str | None:
        if self.first is None:
            return None
        more = f"; {self.count - 1:,} more damaged record(s)" if self.count > 1 else ""
        return (f"damaged TensorBoard event file: {self.first}{more}; the {self.sound:,} sound record(s) are "
                f"compared, and the curves cannot pass")


def masked_crc32c(data: bytes) -> int:
    import google_crc32c  # the tensorboard extra: the caller checked it is there

    crc = google_crc32c.value(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def records(fh, size: int, damage: Damage):
    """(index, offset, data) of every sound record of the open file `fh` of `size` bytes (a
    length is believed only when its checksum matches and the file holds that much); what is
    not sound is added to `damage`."""
    offset = 0
    index = 0
    while True:
        head = fh.read(12)
        if not head:
            return
        index += 1
        if len(head) < 12:
            damage.add(index, offset, f"the file ends inside its header, after {len(head)} of 12 bytes (cut while "
                                      f"it was written?)", stop=True)
            return
        length_bytes, len_crc = head[:8], struct.unpack("<I", head[8:])[0]
        if masked_crc32c(length_bytes) != len_crc:
            damage.add(index, offset, f"its length does not match its checksum (the rest of the file, "
                                      f"{size - offset:,} bytes, was not read)", stop=True)
            return
        length = struct.unpack("<Q", length_bytes)[0]
        left = size - offset - 12
        if length + 4 > left:
            damage.add(index, offset, f"the file ends inside it, after {12 + max(0, left):,} of its {length + 16:,} "
                                      f"bytes (cut while it was written?)", stop=True)
            return
        if length > budget.EVENT_RECORD:
            fh.seek(length + 4, 1)
            damage.add(index, offset, f"{length:,} bytes, more than the {budget.EVENT_RECORD:,} an event record "
                                      f"may take (skipped)")
            offset += 12 + length + 4
            continue
        data = fh.read(length)
        tail = fh.read(4)
        if len(data) < length or len(tail) < 4:  # the file shrank while it was read
            damage.add(index, offset, "the file ends inside it (cut while it was written?)", stop=True)
            return
        if masked_crc32c(data) != struct.unpack("<I", tail)[0]:
            damage.add(index, offset, "its data does not match its checksum (skipped)")
        else:
            damage.sound += 1
            yield index, offset, data
        offset += 12 + length + 4

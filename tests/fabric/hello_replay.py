#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
"""Capture and replay corevia's launcher-free HELLO frames on a link
(AF_PACKET; run inside a scripts/netlab.sh namespace, as root).

  hello_replay.py capture IFACE PORT OUT SECONDS
      every frame this host sends on IFACE that is an IPv4/UDP datagram from
      PORT whose corevia header (40 bytes, the type at offset 8) says HELLO,
      one hex line each, appended to OUT (flushed per frame); for SECONDS at
      most, or until killed
  hello_replay.py replay IFACE IN
      send every frame of IN on IFACE again, byte for byte but for the UDP
      checksum, set to 0 ("none", allowed over IPv4: a frame captured on the
      way out may hold a partial checksum the NIC was to finish); prints the
      count
"""
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
DG_HELLO = 18


def udp_payload_off(frame):
    """Offset of the UDP header in an Ethernet/IPv4/UDP frame, or -1."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return -1
    ihl = (frame[14] & 0x0F) * 4
    if frame[14 + 9] != 17 or len(frame) < 14 + ihl + 8:
        return -1
    return 14 + ihl


def capture(iface, port, out, seconds):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.settimeout(0.1)
    end = time.monotonic() + seconds
    n = 0
    print("capturing", flush=True)
    with open(out, "a") as f:
        while time.monotonic() < end:
            try:
                frame, addr = s.recvfrom(65536)
            except socket.timeout:
                continue
            if addr[2] != PACKET_OUTGOING:
                continue
            u = udp_payload_off(frame)
            if u < 0 or struct.unpack("!H", frame[u:u + 2])[0] != port:
                continue
            if len(frame) < u + 8 + 40 or frame[u + 8 + 8] != DG_HELLO:
                continue
            f.write(frame.hex() + "\n")
            f.flush()
            n += 1
    print("captured %d" % n)


def replay(iface, path):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    n = 0
    with open(path) as f:
        for line in f:
            frame = bytearray(bytes.fromhex(line.strip()))
            u = udp_payload_off(frame)
            if u < 0:
                continue
            frame[u + 6:u + 8] = b"\x00\x00"
            s.send(bytes(frame))
            n += 1
            time.sleep(0.005)
    print("replayed %d" % n)


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "capture":
        capture(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
    elif len(sys.argv) == 4 and sys.argv[1] == "replay":
        replay(sys.argv[2], sys.argv[3])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()

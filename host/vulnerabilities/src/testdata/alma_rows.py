"""Writes the AlmaLinux 9 rows of golden_verdicts.tsv from AlmaLinux's own
advisories (tests/fixtures/osv/almalinux/almalinux9-all.zip, as published),
with rpm's version order implemented here apart from Cairn's (rpmvercmp as
rpm documents it), so the verdict test compares two readings.

Each chosen package is installed at a few of the fixed versions its
advisories name (real builds): at a fixed version, the CVEs of every
advisory with a later fix apply. A second row drops the epoch, as `rpm -qa`
without a query format and many inventories do; it reads as the same build.
Module streams (`module+el9`) are left out: their builds order by stream.

Usage: python3 alma_rows.py ZIP >> golden_verdicts.tsv
"""

import json
import re
import sys
import zipfile

PACKAGES = [
    "openssl", "openssl-libs", "glibc", "glibc-common", "openssh", "openssh-server",
    "openssh-clients", "sudo", "curl", "libcurl", "bind", "bind-libs", "python3",
    "python3-libs", "httpd", "httpd-core", "samba", "samba-client", "git", "git-core",
    "vim-enhanced", "vim-minimal", "systemd", "expat", "libxml2", "sqlite-libs",
    "krb5-libs", "gnutls", "nss", "tar", "less", "libssh", "rsync", "zlib", "libtiff",
    "texlive", "firefox", "thunderbird", "kernel", "kernel-core", "perl", "emacs",
    "libX11", "tigervnc-server", "podman", "runc", "containerd", "grub2-common",
    "shim-x64", "polkit", "cups", "dnsmasq", "unbound", "postfix", "dovecot",
    "squid", "libvirt", "qemu-kvm", "mariadb", "nginx", "php", "ruby", "golang",
    "java-17-openjdk", "java-11-openjdk", "java-1.8.0-openjdk", "libreoffice-core",
    "gimp", "ghostscript", "poppler", "ImageMagick", "xorg-x11-server-Xwayland",
    "webkit2gtk3", "gstreamer1-plugins-good", "openldap", "cyrus-sasl", "pam",
    "shadow-utils", "util-linux", "bash", "coreutils", "binutils", "gcc", "libarchive",
    "libsoup", "libgcrypt", "nghttp2", "c-ares", "jq", "python3-urllib3",
    "python3-requests", "python3-pip", "nodejs", "redis", "haproxy", "keepalived",
]

OS = "AlmaLinux 9.4 (Seafoam Ocelot)"


def segments(text):
    return re.findall(r"~|\^|[0-9]+|[A-Za-z]+", text)


def rpmvercmp(a, b):
    """rpm's comparison of two version (or release) strings."""
    if a == b:
        return 0
    sa, sb = segments(a), segments(b)
    while True:
        if sa and sa[0] == "~" or sb and sb[0] == "~":
            if not (sa and sa[0] == "~"):
                return 1
            if not (sb and sb[0] == "~"):
                return -1
            sa, sb = sa[1:], sb[1:]
            continue
        if sa and sa[0] == "^" or sb and sb[0] == "^":
            if not sa:
                return -1
            if not sb:
                return 1
            if sa[0] != "^":
                return 1
            if sb[0] != "^":
                return -1
            sa, sb = sa[1:], sb[1:]
            continue
        if not sa or not sb:
            break
        x, y = sa[0], sb[0]
        if x.isdigit() != y.isdigit():
            return 1 if x.isdigit() else -1
        if x.isdigit():
            x, y = x.lstrip("0") or "0", y.lstrip("0") or "0"
            if len(x) != len(y):
                return 1 if len(x) > len(y) else -1
        if x != y:
            return 1 if x > y else -1
        sa, sb = sa[1:], sb[1:]
    if not sa and not sb:
        return 0
    return 1 if sa else -1


def evr(text):
    epoch, _, rest = text.rpartition(":")
    version, _, release = rest.partition("-")
    return int(epoch or 0), version, release


def compare(a, b):
    (ea, va, ra), (eb, vb, rb) = evr(a), evr(b)
    if ea != eb:
        return 1 if ea > eb else -1
    return rpmvercmp(va, vb) or rpmvercmp(ra, rb)


def main(path):
    fixes = {}
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            record = json.loads(archive.read(name))
            cves = sorted({c for c in record.get("related", []) if c.startswith("CVE-")})
            if not cves:
                continue
            for affected in record["affected"]:
                package = affected["package"]
                if package["ecosystem"] != "AlmaLinux:9" or package["name"] not in PACKAGES:
                    continue
                for r in affected["ranges"]:
                    events = r["events"]
                    if [list(e) for e in events] != [["introduced"], ["fixed"]]:
                        continue
                    fixed = events[1]["fixed"]
                    if "module+" in fixed or events[0]["introduced"] != "0":
                        continue
                    fixes.setdefault(package["name"], []).append((fixed, cves))
    for package in PACKAGES:
        found = fixes.get(package)
        if not found:
            continue
        builds = sorted({f for f, _ in found}, key=__import__("functools").cmp_to_key(compare))
        picks = sorted({0, len(builds) // 2, len(builds) - 1})
        for index in picks:
            installed = builds[index]
            expected = sorted({c for f, cves in found if compare(installed, f) < 0 for c in cves})
            cell = ",".join(expected) or "-"
            print(f"{package}\t\t{installed}\tlinux\t{OS}\t{cell}")
            if ":" in installed and index == picks[0]:
                print(f"{package}\t\t{installed.split(':', 1)[1]}\tlinux\t{OS}\t{cell}")


if __name__ == "__main__":
    main(sys.argv[1])

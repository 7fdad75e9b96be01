#!/usr/bin/env bash
# The VFIO driver on a real vfio-pci path: boot a small Linux guest under
# QEMU (TCG) with an emulated Intel IOMMU, bind QEMU's edu and e1000e
# devices to vfio-pci, and run weft-driver's static test binary
# (driver/examples/vfio_guest.rs) against them: BAR access, DMA both ways
# through IOMMU mappings, MSI and MSI-X on eventfds, reset, and a DMA to an
# unmapped IOVA blocked by the IOMMU. The recipe and the QEMU quirks it
# avoids are in shared/design/VFIO-IN-QEMU.md.
#
# Installs what it needs when missing (qemu-system-x86, busybox-static,
# cpio, xz-utils; the guest kernel and vfio modules come from Debian's
# linux-image package, downloaded with `apt-get download` and unpacked in
# part, never installed). Downloads and unpacked files are cached under
# $WEFT_CACHE_DIR/vfio-qemu (default ~/.cache/weft/vfio-qemu).
#
# Exits non-zero when anything fails, in the guest or around it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$(date +%s)
cache="${WEFT_CACHE_DIR:-${HOME:-/tmp}/.cache/weft}/vfio-qemu"
mkdir -p "$cache"
say() { echo "vfio-qemu: $*"; }

# --- host packages -----------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
command -v xz >/dev/null || need+=(xz-utils)
updated=0
apt_update() {
    if [ "$updated" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        updated=1
    fi
}
if ((${#need[@]})); then
    say "installing ${need[*]}"
    apt_update
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- guest kernel and vfio modules -------------------------------------------
kpkg=""
if [ -f "$cache/kernel-package" ]; then
    kpkg=$(cat "$cache/kernel-package")
fi
if [ -z "$kpkg" ] || [ ! -f "$cache/$kpkg/vmlinuz" ]; then
    find_kpkg() {
        apt-cache depends linux-image-amd64 2>/dev/null |
            awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
    }
    kpkg=$(find_kpkg || true)
    if [ -z "$kpkg" ]; then
        apt_update
        kpkg=$(find_kpkg)
    fi
    [ -n "$kpkg" ] || { say "cannot find Debian's linux-image package"; exit 1; }
    say "fetching the guest kernel and vfio modules from $kpkg"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # apt-get download writes into the current directory; as root apt warns
    # that it cannot drop privileges for the download, which is harmless.
    fetch() { (cd "$work" && apt-get download -qq "$kpkg" 2>&1 | grep -v "unsandboxed" || true); }
    fetch
    if ! ls "$work"/*.deb >/dev/null 2>&1 && [ "$updated" = 0 ]; then
        # Stale package lists can name a version the mirror no longer has.
        apt_update
        kpkg=$(find_kpkg)
        fetch
    fi
    deb=$(ls "$work"/*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || { say "apt-get download $kpkg produced no package"; exit 1; }
    mkdir -p "$work/x"
    dpkg-deb --fsys-tarfile "$deb" |
        tar -x -C "$work/x" --wildcards --wildcards-match-slash \
            '*/boot/vmlinuz-*' '*/kernel/drivers/vfio/*' '*/kernel/virt/lib/irqbypass.ko*'
    out="$cache/$kpkg"
    rm -rf "$out"
    mkdir -p "$out/modules"
    cp "$(find "$work/x" -path '*/boot/vmlinuz-*' | head -1)" "$out/vmlinuz"
    find "$work/x" \( -name '*.ko' -o -name '*.ko.xz' -o -name '*.ko.zst' \) -exec cp {} "$out/modules/" \;
    for m in "$out"/modules/*.ko.xz; do [ -e "$m" ] && xz -d -f "$m"; done
    for m in "$out"/modules/*.ko.zst; do [ -e "$m" ] && zstd -q -d --rm "$m"; done
    echo "$kpkg" > "$cache/kernel-package"
    rm -rf "$work"
    trap - EXIT
fi
kdir="$cache/$kpkg"
say "guest kernel: $kpkg ($(ls "$kdir/modules" | tr '\n' ' '))"

# --- the static test binary --------------------------------------------------
say "building the static test binary (weft-driver example vfio_guest)"
RUSTFLAGS="-C target-feature=+crt-static" cargo build --quiet --release \
    --target x86_64-unknown-linux-gnu -p weft-driver --example vfio_guest
bin="$root/target/x86_64-unknown-linux-gnu/release/examples/vfio_guest"
# A static(-pie) binary has no program interpreter: the guest has no libc.
if ! ldd "$bin" 2>&1 | grep -Eq "statically linked|not a dynamic executable"; then
    say "$bin is not statically linked"
    exit 1
fi

# --- initramfs ---------------------------------------------------------------
ird=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$ird" "$log"' EXIT
mkdir -p "$ird"/{bin,dev,proc,sys,modules}
cp /bin/busybox "$ird/bin/busybox"
cp "$bin" "$ird/vfio_guest"
cp "$kdir"/modules/*.ko "$ird/modules/"
cat > "$ird/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "guest: kernel $(uname -r)"
# Load order matters: each module needs the ones before it.
for m in irqbypass vfio vfio_iommu_type1 vfio_virqfd vfio-pci-core vfio-pci; do
    if [ -f /modules/$m.ko ]; then
        insmod /modules/$m.ko || echo "guest: insmod $m failed"
    fi
done
echo 8 > /proc/sys/vm/nr_hugepages
edu=""; nic=""; grouped=""
for d in /sys/bus/pci/devices/*; do
    case "$(cat $d/vendor):$(cat $d/device)" in
        0x1234:0x11e8)
            # The edu on the root bus has a group of its own; the two
            # behind the PCIe-to-PCI bridge share one.
            if [ "${d##*/}" = 0000:00:01.0 ]; then edu=${d##*/}; else grouped="$grouped ${d##*/}"; fi ;;
        0x8086:0x10d3) nic=${d##*/} ;;
    esac
done
first=$(echo $grouped | cut -d' ' -f1)
echo "guest: edu at $edu, e1000e at $nic, grouped edu at$grouped; IOMMU groups: $(ls /sys/kernel/iommu_groups | wc -l)"
# The edus are bound here, by the recipe; e1000e by the driver's own bind
# code (the test binary), which is what `weft bind` runs.
for b in $edu $grouped; do
    echo vfio-pci > /sys/bus/pci/devices/$b/driver_override
    echo $b > /sys/bus/pci/drivers_probe
done
# A working VFIO_DEVICE_RESET of QEMU's e1000e needs a bus reset.
echo bus > /sys/bus/pci/devices/$nic/reset_method
/vfio_guest --edu "$edu" --e1000e "$nic" --group-edu "$first"
echo "TEST_RC=$?"
poweroff -f
INIT
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$cache/initramfs.cpio.gz"

# --- boot --------------------------------------------------------------------
say "booting the guest (TCG, q35, intel-iommu)"
t0=$(date +%s)
set +e
timeout 300 qemu-system-x86_64 -machine q35,kernel-irqchip=split -accel tcg -cpu max -smp 2 -m 1G \
    -nodefaults -display none -serial stdio -no-reboot \
    -device intel-iommu,intremap=on \
    -device edu,addr=1.0 \
    -device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1,x-speed=2_5,x-width=1 \
    -device e1000e,bus=rp1 \
    -device pcie-pci-bridge,id=br1,bus=pcie.0 \
    -device edu,bus=br1,addr=1.0 -device edu,bus=br1,addr=2.0 \
    -kernel "$kdir/vmlinuz" -initrd "$cache/initramfs.cpio.gz" \
    -append "console=ttyS0 intel_iommu=on rdinit=/init panic=-1 quiet loglevel=3" \
    </dev/null 2>&1 | tr -d '\r' | tee "$log"
qrc=${PIPESTATUS[0]}
set -e
say "guest ran $(( $(date +%s) - t0 )) s (QEMU exit $qrc)"
rc=$(sed -n 's/.*TEST_RC=\([0-9]*\).*/\1/p' "$log" | tail -1)
if [ -z "$rc" ]; then
    say "FAILED: no TEST_RC line from the guest (QEMU exit $qrc; 124 is the timeout)"
    exit 1
elif [ "$rc" != "0" ]; then
    say "FAILED: the test binary exited $rc in the guest"
    exit 1
fi
say "passed in $(( $(date +%s) - start )) s"

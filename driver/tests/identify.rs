//! Discovery against an in-memory register double.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use weft_driver::{identify, Device, DmaBuffer, Error, RegisterAccess, Result};
use weft_regs::{ctrl, id, BuildInfo, Features, MAP};

struct FakeCard {
    regs: Mutex<HashMap<u32, u32>>,
    bar: u64,
}

impl FakeCard {
    fn new() -> Self {
        let build = BuildInfo {
            board_id: 3,
            build_date: 1_700_000_000,
            git_hash: 0xdead_beef,
            features: Features::CTRL,
        };
        let regs = MAP
            .registers()
            .map(|(b, r)| (r.addr, MAP.reset_value(b, r, &build)))
            .collect();
        Self {
            regs: Mutex::new(regs),
            bar: MAP.span() as u64,
        }
    }
    fn poke(&self, addr: u32, v: u32) {
        self.regs.lock().unwrap().insert(addr, v);
    }
}

impl Device for FakeCard {
    fn name(&self) -> String {
        "fake".into()
    }
    fn bar_len(&self) -> u64 {
        self.bar
    }
    fn read32(&self, addr: u32) -> Result<u32> {
        Ok(*self.regs.lock().unwrap().get(&addr).unwrap_or(&0))
    }
    fn write32(&self, addr: u32, value: u32) -> Result<()> {
        self.poke(addr, value);
        Ok(())
    }
    fn dma_alloc(&self, _len: usize) -> Result<Box<dyn DmaBuffer>> {
        Err(Error::Dma("the register double has no DMA".into()))
    }
    fn wait_irq(&self, _vector: u32, _timeout: Duration) -> Result<bool> {
        Ok(false)
    }
}

#[test]
fn identifies_a_good_card() {
    let card = FakeCard::new();
    let info = identify(&card).unwrap();
    assert_eq!(info.board_name(), Some("u250"));
    assert_eq!(info.git_hash, 0xdead_beef);
    let names: Vec<_> = info.blocks.iter().map(|b| b.name).collect();
    assert_eq!(
        names,
        vec![
            Some("id"),
            Some("ctrl"),
            Some("kv"),
            Some("memops"),
            Some("grad"),
            Some("avm"),
            Some("net")
        ]
    );
    assert_eq!(
        info.map_version_string(),
        format!(
            "{}.{}",
            weft_regs::MAP_VERSION_MAJOR,
            weft_regs::MAP_VERSION_MINOR
        )
    );
}

#[test]
fn refuses_wrong_magic() {
    let card = FakeCard::new();
    card.poke(id::MAGIC.addr, 0x1234);
    let e = identify(&card).unwrap_err();
    assert!(matches!(e, Error::NotWeft { found: 0x1234, .. }), "{e}");
    assert!(e.to_string().contains("0x00001234"));
}

#[test]
fn refuses_unknown_map_version() {
    let card = FakeCard::new();
    let major = weft_regs::MAP_VERSION_MAJOR;
    card.poke(id::MAP_VERSION.addr, (major + 1) << 16);
    let e = identify(&card).unwrap_err();
    let want = format!("{}.0 is not supported", major + 1);
    assert!(e.to_string().contains(&want), "{e}");
    card.poke(id::MAP_VERSION.addr, major << 16 | 0xff);
    assert!(identify(&card).is_err());
}

#[test]
fn refuses_chain_loops_and_small_windows() {
    let card = FakeCard::new();
    card.poke(ctrl::BLK_NEXT.addr, 0);
    assert!(identify(&card).is_ok());
    card.poke(ctrl::BLK_NEXT.addr, 0x100);
    let e = identify(&card).unwrap_err();
    assert!(matches!(e, Error::Chain { addr: 0x100, .. }), "{e}");
    let small = FakeCard {
        bar: 0x1000,
        ..FakeCard::new()
    };
    assert!(matches!(
        identify(&small),
        Err(Error::WindowTooSmall { .. })
    ));
}

#[test]
fn read_only_writes_are_refused_before_the_device() {
    let card = FakeCard::new();
    let e = card.write_reg(&id::MAGIC, 0).unwrap_err();
    assert_eq!(e.to_string(), "register id.MAGIC is read-only");
    card.write_reg(&ctrl::SCRATCH, 5).unwrap();
    assert_eq!(card.read_reg(&ctrl::SCRATCH).unwrap(), 5);
}

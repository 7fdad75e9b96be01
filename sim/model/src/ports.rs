//! Port-level input and output structs shared by a block's model and both
//! simulators.
//!
//! A block's ports are declared once with [`ports!`](crate::ports!): field
//! names are the RTL port names, each with its width in bits. The Verilator
//! backend checks the declared list against the Verilog module's ports and
//! moves values as packed 32-bit words, one FFI call per cycle, ports wider
//! than 64 bits included.

/// One port: its RTL name and width in bits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Port {
    /// RTL port name.
    pub name: &'static str,
    /// Width in bits.
    pub width: usize,
}

/// 32-bit words a port of `width` bits occupies when packed.
pub const fn words(width: usize) -> usize {
    width.div_ceil(32)
}

/// A set of ports that packs to and from 32-bit words in declaration order.
pub trait PortSet: Clone + Default + std::fmt::Debug {
    /// The ports, in packing order.
    const PORTS: &'static [Port];
    /// Append the packed words of every port, in order.
    fn pack(&self, out: &mut Vec<u32>);
    /// Rebuild from packed words (the inverse of [`PortSet::pack`]).
    fn unpack(words: &[u32]) -> Self;
    /// Total packed words.
    fn total_words() -> usize {
        Self::PORTS.iter().map(|p| words(p.width)).sum()
    }
}

/// A Rust value that carries one port.
pub trait PortValue: Sized {
    /// Append `words(width)` words, bits above `width` cleared.
    fn pack(&self, width: usize, out: &mut Vec<u32>);
    /// Read `words(width)` words from the front of `w`.
    fn unpack(width: usize, w: &[u32]) -> Self;
}

fn mask_top(width: usize, v: &mut [u32]) {
    let rem = width % 32;
    if rem != 0 {
        if let Some(last) = v.last_mut() {
            *last &= (1u32 << rem) - 1;
        }
    }
}

macro_rules! scalar_port {
    ($($t:ty),*) => {$(
        impl PortValue for $t {
            fn pack(&self, width: usize, out: &mut Vec<u32>) {
                let v = *self as u64;
                let start = out.len();
                for i in 0..words(width) {
                    out.push((v >> (32 * i)) as u32);
                }
                mask_top(width, &mut out[start..]);
            }
            fn unpack(width: usize, w: &[u32]) -> Self {
                let mut v = 0u64;
                for i in 0..words(width).min(2) {
                    v |= (w[i] as u64) << (32 * i);
                }
                v as $t
            }
        }
    )*};
}
scalar_port!(u8, u16, u32, u64);

impl PortValue for bool {
    fn pack(&self, _width: usize, out: &mut Vec<u32>) {
        out.push(*self as u32);
    }
    fn unpack(_width: usize, w: &[u32]) -> Self {
        w[0] & 1 != 0
    }
}

impl<const N: usize> PortValue for [u32; N] {
    fn pack(&self, width: usize, out: &mut Vec<u32>) {
        let start = out.len();
        out.extend_from_slice(&self[..words(width)]);
        mask_top(width, &mut out[start..]);
    }
    fn unpack(width: usize, w: &[u32]) -> Self {
        let mut v = [0u32; N];
        v[..words(width)].copy_from_slice(&w[..words(width)]);
        v
    }
}

/// Declare a block's port struct: `name: type = width` per port.
///
/// ```
/// weft_model::ports! {
///     /// Example ports.
///     pub struct Example {
///         /// A byte.
///         pub data: u8 = 8,
///         /// A flag.
///         pub valid: bool = 1,
///     }
/// }
/// use weft_model::PortSet;
/// let mut w = vec![];
/// Example { data: 7, valid: true }.pack(&mut w);
/// assert_eq!(Example::unpack(&w), Example { data: 7, valid: true });
/// ```
#[macro_export]
macro_rules! ports {
    ($(#[$m:meta])* $vis:vis struct $name:ident {
        $( $(#[$fm:meta])* $fvis:vis $field:ident : $ty:ty = $width:expr ),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
        $vis struct $name { $( $(#[$fm])* $fvis $field: $ty ),* }

        impl $crate::ports::PortSet for $name {
            const PORTS: &'static [$crate::ports::Port] = &[
                $( $crate::ports::Port { name: stringify!($field), width: $width } ),*
            ];
            fn pack(&self, out: &mut Vec<u32>) {
                $( $crate::ports::PortValue::pack(&self.$field, $width, out); )*
            }
            #[allow(unused_assignments)]
            fn unpack(words: &[u32]) -> Self {
                let mut at = 0usize;
                Self { $( $field: {
                    let v = $crate::ports::PortValue::unpack($width, &words[at..]);
                    at += $crate::ports::words($width);
                    v
                } ),* }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::ports! {
        struct Wide {
            a: u8 = 3,
            b: [u32; 3] = 70,
            c: u64 = 33,
        }
    }

    #[test]
    fn pack_masks_and_round_trips() {
        let v = Wide {
            a: 0xff,
            b: [1, 2, 0xffff_ffff],
            c: u64::MAX,
        };
        let mut w = vec![];
        v.pack(&mut w);
        assert_eq!(w.len(), Wide::total_words());
        assert_eq!(w, vec![7, 1, 2, 0x3f, 0xffff_ffff, 1]);
        let back = Wide::unpack(&w);
        assert_eq!(back.a, 7);
        assert_eq!(back.b, [1, 2, 0x3f]);
        assert_eq!(back.c, (1u64 << 33) - 1);
    }
}

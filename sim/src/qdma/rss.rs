//! The shell's receive-queue choice, as a model: a Toeplitz hash over the
//! IPv4 addresses and TCP/UDP ports (`qdma_subsystem_hash.sv`), its low 7
//! bits indexing the function's 128-entry indirection table. Non-IPv4
//! frames hash to 0.
//!
//! How the shell orders the key's bytes in its registers is not stated in
//! its sources (inferred): the driver writes each 32-bit word with the
//! key's bytes most significant first, and the model reads them so.

/// The Toeplitz hash of `input` under `key` (Microsoft RSS: for every set
/// bit of the input, XOR in the 32 key bits starting at that bit).
pub fn toeplitz(key: &[u8], input: &[u8]) -> u32 {
    let bit = |i: usize| -> u32 {
        key.get(i / 8)
            .map_or(0, |b| ((b >> (7 - i % 8)) & 1) as u32)
    };
    let mut window: u32 = (0..32).fold(0, |w, i| (w << 1) | bit(i));
    let mut h = 0;
    for (n, byte) in input.iter().enumerate() {
        for b in 0..8 {
            if (byte >> (7 - b)) & 1 == 1 {
                h ^= window;
            }
            window = (window << 1) | bit(32 + 8 * n + b);
        }
    }
    h
}

/// The hash input of an Ethernet frame: source and destination IPv4
/// addresses, then (TCP or UDP, first fragment) source and destination
/// ports; `None` for anything that is not IPv4.
pub fn tuple(frame: &[u8]) -> Option<Vec<u8>> {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] || frame[14] >> 4 != 4 {
        return None;
    }
    let ihl = 4 * (frame[14] & 0xf) as usize;
    let mut t = frame[26..34].to_vec();
    let proto = frame[23];
    let frag = u16::from_be_bytes([frame[20], frame[21]]) & 0x1fff;
    let l4 = 14 + ihl;
    if (proto == 6 || proto == 17) && frag == 0 && frame.len() >= l4 + 4 {
        t.extend_from_slice(&frame[l4..l4 + 4]);
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_driver::qdma::regs::RSS_KEY;

    /// Source address and port, destination address and port, the hash
    /// of the addresses alone and with the ports.
    type Vector = ([u8; 4], u16, [u8; 4], u16, u32, u32);

    /// Microsoft's "Verifying the RSS Hash Calculation" vectors (IPv4).
    #[test]
    fn microsoft_verification_vectors() {
        let v: [Vector; 3] = [
            (
                [66, 9, 149, 187],
                2794,
                [161, 142, 100, 80],
                1766,
                0x323e8fc2,
                0x51ccc178,
            ),
            (
                [199, 92, 111, 2],
                14230,
                [65, 69, 140, 83],
                4739,
                0xd718262a,
                0xc626b0ea,
            ),
            (
                [24, 19, 198, 95],
                12898,
                [12, 22, 207, 184],
                38024,
                0xd2d0a5de,
                0x5c2b394a,
            ),
        ];
        for (src, sp, dst, dp, ip_only, with_ports) in v {
            let mut t = [src, dst].concat();
            assert_eq!(toeplitz(&RSS_KEY, &t), ip_only);
            t.extend(sp.to_be_bytes());
            t.extend(dp.to_be_bytes());
            assert_eq!(toeplitz(&RSS_KEY, &t), with_ports);
        }
    }

    #[test]
    fn only_ipv4_has_a_tuple() {
        assert_eq!(tuple(&[0u8; 60]), None);
        let mut f = vec![0u8; 60];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = 17;
        f[26..34].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        f[34..38].copy_from_slice(&[0, 9, 0, 10]);
        assert_eq!(
            tuple(&f).unwrap(),
            vec![1, 2, 3, 4, 5, 6, 7, 8, 0, 9, 0, 10]
        );
    }
}

//! The zip container of an FMU (PKWARE APPNOTE 6.3: local headers, the
//! central directory, its end record), entries deflated with flate2, and
//! the reader the tests and `rmoc fmu --list` use.

use std::io::Write;

/// Deflates `files` (path, bytes) into the bytes of a zip archive.
pub fn zip(files: &[(String, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in files {
        let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        // (Writing to a Vec cannot fail.)
        let _ = enc.write_all(data);
        let packed = enc.finish().unwrap_or_default();
        let crc = crc32fast::hash(data);
        let offset = out.len() as u32;
        let header = |sig: u32, central: bool| {
            let mut h = Vec::new();
            h.extend(sig.to_le_bytes());
            if central {
                h.extend(((3u16 << 8) | 20).to_le_bytes()); // made by: Unix, 2.0
            }
            h.extend(20u16.to_le_bytes()); // needed to extract: 2.0
            h.extend(0x0800u16.to_le_bytes()); // flags: UTF-8 names
            h.extend(8u16.to_le_bytes()); // deflate
            h.extend(0u16.to_le_bytes()); // time
            h.extend(0x21u16.to_le_bytes()); // date: 1980-01-01
            h.extend(crc.to_le_bytes());
            h.extend((packed.len() as u32).to_le_bytes());
            h.extend((data.len() as u32).to_le_bytes());
            h.extend((name.len() as u16).to_le_bytes());
            h.extend(0u16.to_le_bytes()); // extra length
            if central {
                h.extend(0u16.to_le_bytes()); // comment length
                h.extend(0u16.to_le_bytes()); // disk
                h.extend(0u16.to_le_bytes()); // internal attributes
                h.extend((0o100644u32 << 16).to_le_bytes()); // external: rw-r--r--
                h.extend(offset.to_le_bytes());
            }
            h.extend(name.as_bytes());
            h
        };
        out.extend(header(0x04034b50, false));
        out.extend(&packed);
        central.extend(header(0x02014b50, true));
    }
    let cd_offset = out.len() as u32;
    let cd_size = central.len() as u32;
    out.extend(central);
    out.extend(0x06054b50u32.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out.extend((files.len() as u16).to_le_bytes());
    out.extend((files.len() as u16).to_le_bytes());
    out.extend(cd_size.to_le_bytes());
    out.extend(cd_offset.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

/// The entries (path, bytes) of a zip archive written by [`zip`] or any
/// tool that stores or deflates; `None` for what is not such an archive.
pub fn unzip(bytes: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let u16_at = |p: usize| -> Option<usize> {
        Some(u16::from_le_bytes(bytes.get(p..p + 2)?.try_into().ok()?) as usize)
    };
    let u32_at = |p: usize| -> Option<usize> {
        Some(u32::from_le_bytes(bytes.get(p..p + 4)?.try_into().ok()?) as usize)
    };
    // The end record: the last signature within the comment's reach.
    let end = (0..bytes.len().saturating_sub(21))
        .rev()
        .take(65_557)
        .find(|&p| u32_at(p) == Some(0x06054b50))?;
    let count = u16_at(end + 10)?;
    let mut p = u32_at(end + 16)?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        if u32_at(p)? != 0x02014b50 {
            return None;
        }
        let method = u16_at(p + 10)?;
        let p_crc = p + 16;
        let packed_len = u32_at(p + 20)?;
        let len = u32_at(p + 24)?;
        let name_len = u16_at(p + 28)?;
        let extra = u16_at(p + 30)?;
        let comment = u16_at(p + 32)?;
        let local = u32_at(p + 42)?;
        let name = String::from_utf8(bytes.get(p + 46..p + 46 + name_len)?.to_vec()).ok()?;
        p += 46 + name_len + extra + comment;
        let data_at = local + 30 + u16_at(local + 26)? + u16_at(local + 28)?;
        let packed = bytes.get(data_at..data_at + packed_len)?;
        let data = match method {
            0 => packed.to_vec(),
            8 => {
                let mut dec = flate2::write::DeflateDecoder::new(Vec::new());
                dec.write_all(packed).ok()?;
                dec.finish().ok()?
            }
            _ => return None,
        };
        if data.len() != len || crc32fast::hash(&data) as usize != u32_at(p_crc)? {
            return None;
        }
        out.push((name, data));
    }
    Some(out)
}

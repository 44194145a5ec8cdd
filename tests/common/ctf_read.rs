//! A reader of the CTF exports' stream files, for the export tests
//! (`#[path = "common/ctf_read.rs"] mod ctf_read;`): the packets and the
//! events `stream_0` holds, decoded with the layouts `metadata` declares
//! (the export's own TSDL, not any TSDL).
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

/// A packet's header and context, and its events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Byte offset of the packet in the file.
    pub at: usize,
    pub packet_bits: u64,
    pub content_bits: u64,
    pub begin: u64,
    pub end: u64,
    pub discarded: u64,
    pub events: Vec<ReadEvent>,
}

/// An event as read back: header, context, and its payload bytes (every
/// field's bytes in order, but for a sequence's length field and the
/// `truncated` flag, which is `truncated`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadEvent {
    pub id: u16,
    pub timestamp: u64,
    pub pid: u32,
    pub tid: u32,
    pub truncated: Option<bool>,
    pub data: Vec<u8>,
}

/// A field: its name, its element size, and its count (a number, or the
/// name of the field before it that holds it).
struct Field {
    name: String,
    size: usize,
    count: Result<usize, String>,
}

fn layouts(meta: &str) -> HashMap<u16, Vec<Field>> {
    let mut out = HashMap::new();
    for decl in meta.split("\nevent {").skip(1) {
        let id_at = decl.find("\n    id = ").unwrap() + 10;
        let id: u16 = decl[id_at..id_at + decl[id_at..].find(';').unwrap()]
            .parse()
            .unwrap();
        let body = &decl[decl.find("fields := struct {").unwrap() + 18..];
        let body = &body[..body.find("\n    };").unwrap()];
        let fields = body
            .lines()
            .filter_map(|l| l.trim().strip_suffix(';'))
            .map(|l| {
                let (ty, rest) = l.split_once(' ').unwrap();
                let size = match ty {
                    "uint8_t" | "utf8_t" => 1,
                    "uint16_t" => 2,
                    "uint32_t" | "int32_t" => 4,
                    "uint64_t" | "int64_t" | "hex64_t" => 8,
                    t => panic!("type {t} in {l}"),
                };
                match rest.split_once('[') {
                    None => Field {
                        name: rest.into(),
                        size,
                        count: Ok(1),
                    },
                    Some((name, n)) => {
                        let n = n.trim_end_matches(']');
                        Field {
                            name: name.into(),
                            size,
                            count: n.parse().map_err(|_| n.to_string()),
                        }
                    }
                }
            })
            .collect();
        out.insert(id, fields);
    }
    out
}

/// The packets of the CTF export in `dir`, with their events.
pub fn read_ctf(dir: &Path) -> Vec<Packet> {
    let meta = std::fs::read_to_string(dir.join("metadata")).unwrap();
    let lay = layouts(&meta);
    let s = std::fs::read(dir.join("stream_0")).unwrap();
    let u = |at: usize, n: usize| -> u64 {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&s[at..at + n]);
        u64::from_le_bytes(b)
    };
    let mut packets = Vec::new();
    let mut at = 0;
    while at < s.len() {
        assert_eq!(u(at, 4), 0xC1FC_1FC1, "magic at {at}");
        assert_eq!(u(at + 4, 4), 0, "stream id at {at}");
        let mut p = Packet {
            at,
            packet_bits: u(at + 8, 8),
            content_bits: u(at + 16, 8),
            begin: u(at + 24, 8),
            end: u(at + 32, 8),
            discarded: u(at + 40, 8),
            events: Vec::new(),
        };
        let stop = at + (p.content_bits / 8) as usize;
        let mut i = at + 48;
        while i < stop {
            let id = u(i, 2) as u16;
            let mut e = ReadEvent {
                id,
                timestamp: u(i + 2, 8),
                pid: u(i + 10, 4) as u32,
                tid: u(i + 14, 4) as u32,
                truncated: None,
                data: Vec::new(),
            };
            i += 18;
            let mut values: HashMap<&str, u64> = HashMap::new();
            let mut lengths = Vec::new();
            for f in lay
                .get(&id)
                .unwrap_or_else(|| panic!("no layout for id {id}"))
            {
                if let Err(len) = &f.count {
                    lengths.push(len.clone());
                }
            }
            for f in &lay[&id] {
                let n = match &f.count {
                    Ok(n) => *n,
                    Err(len) => values[len.as_str()] as usize,
                };
                let bytes = &s[i..i + f.size * n];
                if n == 1 && f.size <= 8 {
                    values.insert(&f.name, u(i, f.size));
                }
                if f.name == "truncated" && f.size == 1 && n == 1 {
                    e.truncated = Some(bytes[0] != 0);
                } else if !lengths.contains(&f.name) {
                    e.data.extend_from_slice(bytes);
                }
                i += f.size * n;
            }
            p.events.push(e);
        }
        assert_eq!(i, stop, "packet at {at}: events past its content");
        at += (p.packet_bits / 8) as usize;
        packets.push(p);
    }
    assert_eq!(at, s.len(), "packets past the end of the file");
    packets
}

//! The payload schema of system events: field types, fields and decoded values.
//!
//! A leaf: it imports nothing from the rest of the crate, so the event id table,
//! the log format and the system event catalogue can all describe payloads with it.

/// Bytes of an event set payload field: a bitmap of the whole id space
/// (`ID_SPACE / 8`; the id table checks the two agree at compile time).
pub const EVENT_SET_BYTES: usize = 128;

/// The type of one payload field (all little-endian, packed without padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u64` shown in hexadecimal (addresses, handles)
    Hex64,
    /// an event set: 128 bytes, a bitmap of the id space in little-endian `u64` words
    EventSet,
}

impl FieldType {
    /// Size in bytes.
    pub const fn size(self) -> usize {
        match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::U32 | FieldType::I32 => 4,
            FieldType::U64 | FieldType::I64 | FieldType::Hex64 => 8,
            FieldType::EventSet => EVENT_SET_BYTES,
        }
    }

    /// The code stored in logs.
    pub const fn code(self) -> u8 {
        match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::U32 => 3,
            FieldType::U64 => 4,
            FieldType::I32 => 5,
            FieldType::I64 => 6,
            FieldType::Hex64 => 7,
            FieldType::EventSet => 8,
        }
    }

    /// The type from its log code.
    pub fn from_code(c: u8) -> Option<FieldType> {
        Some(match c {
            1 => FieldType::U8,
            2 => FieldType::U16,
            3 => FieldType::U32,
            4 => FieldType::U64,
            5 => FieldType::I32,
            6 => FieldType::I64,
            7 => FieldType::Hex64,
            8 => FieldType::EventSet,
            _ => return None,
        })
    }
}

/// One named payload field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// Field name (printed by `rtrace`, a CTF field name: `[a-z_][a-z0-9_]*`).
    pub name: &'static str,
    /// Its type.
    pub ty: FieldType,
}

/// A decoded payload value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// An unsigned integer (`U8`..`U64`).
    U(u64),
    /// A signed integer (`I32`, `I64`).
    I(i64),
    /// A hexadecimal integer (`Hex64`).
    Hex(u64),
    /// The ids in an event set.
    Set(Vec<u16>),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::U(v) => write!(f, "{v}"),
            Value::I(v) => write!(f, "{v}"),
            Value::Hex(v) => write!(f, "{v:#x}"),
            Value::Set(ids) => {
                write!(f, "{{")?;
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, "{id}")?;
                }
                write!(f, "}}")
            }
        }
    }
}

/// Decodes a payload by its layout; `None` if the payload is shorter than the layout.
pub fn decode<'a>(
    fields: &'a [(String, FieldType)],
    payload: &[u8],
) -> Option<Vec<(&'a str, Value)>> {
    let mut out = Vec::with_capacity(fields.len());
    let mut at = 0usize;
    for fl in fields {
        let (name, ty) = (fl.0.as_str(), fl.1);
        let n = ty.size();
        let b = payload.get(at..at + n)?;
        at += n;
        let mut w = [0u8; 8];
        if n <= 8 {
            w[..n].copy_from_slice(b);
        }
        let u = u64::from_le_bytes(w);
        let v = match ty {
            FieldType::U8 | FieldType::U16 | FieldType::U32 | FieldType::U64 => Value::U(u),
            FieldType::I32 => Value::I(u as u32 as i32 as i64),
            FieldType::I64 => Value::I(u as i64),
            FieldType::Hex64 => Value::Hex(u),
            FieldType::EventSet => {
                let mut ids = Vec::new();
                for (wi, c) in b.chunks_exact(8).enumerate() {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(c);
                    let mut x = u64::from_le_bytes(word);
                    while x != 0 {
                        ids.push((wi * 64) as u16 + x.trailing_zeros() as u16);
                        x &= x - 1;
                    }
                }
                Value::Set(ids)
            }
        };
        out.push((name, v));
    }
    Some(out)
}

//! Numpy size-in-bytes type codes (`u1`, `f4`, `c16`, ...) as roverd `meta.json` names them,
//! and typed, zero-copy views of little-endian sample bytes.

use std::fmt;

use crate::error::{Error, Result};

/// A channel element type. Always little-endian on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    U1,
    I1,
    U2,
    I2,
    U4,
    I4,
    U8,
    I8,
    F2,
    F4,
    F8,
    C8,
    C16,
    /// numpy `bool` (`b1`), one byte per element.
    B1,
}

impl DType {
    /// Every type code, in the order the error message lists them.
    pub const ALL: [DType; 14] = [
        DType::U1,
        DType::I1,
        DType::U2,
        DType::I2,
        DType::U4,
        DType::I4,
        DType::U8,
        DType::I8,
        DType::F2,
        DType::F4,
        DType::F8,
        DType::C8,
        DType::C16,
        DType::B1,
    ];

    /// Parses a type code. A leading `<` or `|` (numpy's little-endian / not-applicable
    /// markers) is accepted; `>` is refused because roverd stores little-endian only.
    pub fn parse(code: &str) -> Result<DType> {
        let bare = code
            .strip_prefix('<')
            .or_else(|| code.strip_prefix('|'))
            .unwrap_or(code);
        Ok(match bare {
            "u1" => DType::U1,
            "i1" => DType::I1,
            "u2" => DType::U2,
            "i2" => DType::I2,
            "u4" => DType::U4,
            "i4" => DType::I4,
            "u8" => DType::U8,
            "i8" => DType::I8,
            "f2" => DType::F2,
            "f4" => DType::F4,
            "f8" => DType::F8,
            "c8" => DType::C8,
            "c16" => DType::C16,
            "b1" => DType::B1,
            _ => {
                return Err(Error::InvalidType {
                    code: code.to_string(),
                })
            }
        })
    }

    /// The code as written in `meta.json`.
    pub fn code(self) -> &'static str {
        match self {
            DType::U1 => "u1",
            DType::I1 => "i1",
            DType::U2 => "u2",
            DType::I2 => "i2",
            DType::U4 => "u4",
            DType::I4 => "i4",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::F2 => "f2",
            DType::F4 => "f4",
            DType::F8 => "f8",
            DType::C8 => "c8",
            DType::C16 => "c16",
            DType::B1 => "b1",
        }
    }

    /// Bytes per element.
    pub fn itemsize(self) -> usize {
        match self {
            DType::U1 | DType::I1 | DType::B1 => 1,
            DType::U2 | DType::I2 | DType::F2 => 2,
            DType::U4 | DType::I4 | DType::F4 => 4,
            DType::U8 | DType::I8 | DType::F8 | DType::C8 => 8,
            DType::C16 => 16,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl std::str::FromStr for DType {
    type Err = Error;
    fn from_str(s: &str) -> Result<DType> {
        DType::parse(s)
    }
}

/// A Rust element type that a channel's bytes can be viewed as.
///
/// Sealed: implemented for the primitive numbers whose little-endian byte image is exactly
/// what roverd stores. Complex types are viewed as pairs of their float parts (`c8` as `f32`),
/// `f2` and `b1` as their raw `u16`/`u8` images.
pub trait Element: Copy + Default + sealed::Sealed + 'static {
    /// The element's size in bytes.
    const SIZE: usize;
    /// Decodes one element from exactly `SIZE` little-endian bytes.
    fn from_le(bytes: &[u8]) -> Self;
    /// Whether `dtype` may be viewed as `Self` (same byte width and kind).
    fn compatible(dtype: DType) -> bool;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! element {
    ($t:ty, $($dt:ident)|+) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("caller passes SIZE bytes"))
            }
            fn compatible(dtype: DType) -> bool {
                matches!(dtype, $(DType::$dt)|+)
            }
        }
    };
}

element!(u8, U1 | B1);
element!(i8, I1);
element!(u16, U2 | F2);
element!(i16, I2);
element!(u32, U4);
element!(i32, I4);
element!(u64, U8);
element!(i64, I8);
element!(f32, F4 | C8);
element!(f64, F8 | C16);

/// Borrows `bytes` as `&[T]` when the host is little-endian and the bytes are aligned and a
/// whole number of elements; `None` otherwise (use [`decode_vec`] then).
pub fn view<T: Element>(bytes: &[u8]) -> Option<&[T]> {
    if cfg!(target_endian = "big") || !bytes.len().is_multiple_of(T::SIZE) {
        return None;
    }
    // SAFETY: every `Element` is a plain number type for which any bit pattern is valid;
    // `align_to` only yields a non-empty middle part at a correctly aligned address.
    let (head, body, tail) = unsafe { bytes.align_to::<T>() };
    (head.is_empty() && tail.is_empty()).then_some(body)
}

/// Decodes little-endian `bytes` into a new vector (the copying fallback of [`view`]).
/// Trailing bytes that do not form a whole element are ignored.
pub fn decode_vec<T: Element>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::SIZE).map(T::from_le).collect()
}

/// IEEE half to single precision (exact): an `f2` sample's value, whatever the channel's
/// format (roverd channels and zarr arrays alike).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            // Subnormal: normalise the mantissa.
            let mut e: u32 = 127 - 15 + 1;
            let mut m = man;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((m & 0x3ff) << 13)
        }
        31 => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips() {
        for dt in DType::ALL {
            assert_eq!(DType::parse(dt.code()).unwrap(), dt);
            assert_eq!(DType::parse(&format!("<{}", dt.code())).unwrap(), dt);
        }
    }

    #[test]
    fn bad_codes_are_named() {
        for bad in ["f16", ">f4", "", "float32", "u3"] {
            let e = DType::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn view_and_decode_agree() {
        let values = [1.5f32, -2.25, 3.0];
        let mut bytes = vec![0u8]; // force a misaligned copy next to an aligned one
        for v in values {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(decode_vec::<f32>(&bytes[1..]), values);
        let aligned: Vec<u8> = bytes[1..].to_vec();
        if let Some(v) = view::<f32>(&aligned) {
            assert_eq!(v, values);
        }
        assert!(view::<f32>(&aligned[..5]).is_none());
    }
}

//! Typed values: what the packed, already little-endian bytes of one field (or of a scalar
//! array) become when a caller wants numbers and strings rather than bytes
//! ([`ZarrArray::read_field`](super::ZarrArray::read_field), the L5Kit layer). Parsing dtypes
//! and planning byte swaps is [`dtype`](super::dtype)'s concern; this file only decodes. Half
//! floats live here too, both ways, since fill values need the other direction.

use super::dtype::{Scalar, ScalarKind};
use crate::format::dtype::f16_to_f32;

/// Typed values of one field (or of a scalar array), flattened in C order.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    /// `i8`, and `M8`/`m8` as their counts of units (NaT is `i64::MIN`; the unit is in the
    /// dtype).
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    /// `f2` values widened to `f32`.
    F16(Vec<f32>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// `c8` as `[real, imaginary]` pairs (numpy's `complex64`).
    C64(Vec<[f32; 2]>),
    /// `c16` as `[real, imaginary]` pairs (numpy's `complex128`).
    C128(Vec<[f64; 2]>),
    /// `U n`, trailing NULs stripped (numpy semantics).
    Str(Vec<String>),
    /// `S n` (trailing NULs stripped) and `V n` (as stored).
    Bytes(Vec<Vec<u8>>),
}

/// One field of a row range as typed values.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Number of rows.
    pub rows: usize,
    /// Shape of the field within one row (`[]` for one value per row).
    pub shape: Vec<usize>,
    /// `rows * prod(shape)` values, row after row.
    pub values: Values,
}

/// Decodes packed little-endian elements of scalar type `s` (`bytes.len()` is a multiple of
/// `s.size`).
pub fn decode_values(s: &Scalar, bytes: &[u8]) -> Values {
    macro_rules! num {
        ($t:ty, $v:ident) => {
            Values::$v(
                bytes
                    .chunks_exact(std::mem::size_of::<$t>())
                    .map(|c| <$t>::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            )
        };
    }
    match (s.kind, s.size) {
        (ScalarKind::Bool, _) => Values::Bool(bytes.iter().map(|&b| b != 0).collect()),
        (ScalarKind::Int, 1) => num!(i8, I8),
        (ScalarKind::Int, 2) => num!(i16, I16),
        (ScalarKind::Int, 4) => num!(i32, I32),
        // datetime64/timedelta64 as their counts of units; the unit is in the dtype.
        (ScalarKind::Int | ScalarKind::Datetime(_) | ScalarKind::Timedelta(_), _) => {
            num!(i64, I64)
        }
        (ScalarKind::UInt, 1) => Values::U8(bytes.to_vec()),
        (ScalarKind::UInt, 2) => num!(u16, U16),
        (ScalarKind::UInt, 4) => num!(u32, U32),
        (ScalarKind::UInt, _) => num!(u64, U64),
        (ScalarKind::Float, 2) => Values::F16(
            bytes
                .chunks_exact(2)
                .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
        ),
        (ScalarKind::Float, 4) => num!(f32, F32),
        (ScalarKind::Float, _) => num!(f64, F64),
        (ScalarKind::Complex, 8) => Values::C64(
            bytes
                .chunks_exact(8)
                .map(|c| [0, 4].map(|h| f32::from_le_bytes(c[h..h + 4].try_into().unwrap())))
                .collect(),
        ),
        (ScalarKind::Complex, _) => Values::C128(
            bytes
                .chunks_exact(16)
                .map(|c| [0, 8].map(|h| f64::from_le_bytes(c[h..h + 8].try_into().unwrap())))
                .collect(),
        ),
        (ScalarKind::Unicode, _) if s.size == 0 => {
            Values::Str(vec![String::new(); if bytes.is_empty() { 0 } else { 1 }])
        }
        (ScalarKind::Unicode, _) => {
            Values::Str(bytes.chunks_exact(s.size).map(utf32_str).collect())
        }
        (ScalarKind::Bytes, _) if s.size > 0 => Values::Bytes(
            bytes
                .chunks_exact(s.size)
                .map(|c| {
                    let end = c.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                    c[..end].to_vec()
                })
                .collect(),
        ),
        (ScalarKind::Void, _) if s.size > 0 => {
            Values::Bytes(bytes.chunks_exact(s.size).map(<[u8]>::to_vec).collect())
        }
        (ScalarKind::Bytes | ScalarKind::Void, _) => Values::Bytes(Vec::new()),
    }
}

/// A NUL-padded UTF-32LE string (trailing NULs stripped, interior ones kept, as numpy does);
/// invalid code points become U+FFFD.
pub fn utf32_str(bytes: &[u8]) -> String {
    let units: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let end = units.iter().rposition(|&u| u != 0).map_or(0, |p| p + 1);
    units[..end]
        .iter()
        .map(|&u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// Double to IEEE half, round to nearest even (via `f32`; used for fill values only).
pub fn f64_to_f16(v: f64) -> u16 {
    let b = (v as f32).to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let mut r = m >> shift;
        let rem = m & ((1 << shift) - 1);
        if rem > half || (rem == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unicode_keeps_interior_nuls_like_numpy() {
        // numpy: np.array(['a\x00b', 'é€𝄞'], dtype='<U4') reads back 'a\x00b' and 'é€𝄞'.
        let s = Scalar {
            kind: ScalarKind::Unicode,
            size: 16,
            big_endian: false,
        };
        let bytes: Vec<u8> = ['a', '\0', 'b', '\0', 'é', '€', '𝄞', '\0']
            .iter()
            .flat_map(|&c| (c as u32).to_le_bytes())
            .collect();
        assert_eq!(
            decode_values(&s, &bytes),
            Values::Str(vec!["a\0b".into(), "é€𝄞".into()])
        );
    }

    #[test]
    fn complex_values_are_real_imaginary_pairs() {
        let c8 = Scalar {
            kind: ScalarKind::Complex,
            size: 8,
            big_endian: false,
        };
        let bytes: Vec<u8> = [1.5f32, -2.0, 0.25, f32::INFINITY]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        assert_eq!(
            decode_values(&c8, &bytes),
            Values::C64(vec![[1.5, -2.0], [0.25, f32::INFINITY]])
        );
        let c16 = Scalar { size: 16, ..c8 };
        let bytes: Vec<u8> = [3.0f64, -4.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        assert_eq!(decode_values(&c16, &bytes), Values::C128(vec![[3.0, -4.0]]));
    }

    #[test]
    fn datetimes_are_counts_of_their_unit() {
        let dt = match crate::zarr::DType::parse_typestr("<m8[10ms]").unwrap() {
            crate::zarr::DType::Scalar(s) => s,
            other => panic!("{other}"),
        };
        let bytes: Vec<u8> = [i64::MIN, -3, 1 << 40]
            .iter()
            .flat_map(|n| n.to_le_bytes())
            .collect();
        assert_eq!(
            decode_values(&dt, &bytes),
            Values::I64(vec![i64::MIN, -3, 1 << 40])
        );
    }

    #[test]
    fn half_floats() {
        for v in [
            0.0,
            1.5,
            -2.0,
            65504.0,
            2f64.powi(-14),
            2f64.powi(-24),
            3.0 * 2f64.powi(-20),
            f64::INFINITY,
        ] {
            assert_eq!(f16_to_f32(f64_to_f16(v)) as f64, v, "{v}");
        }
        assert!(f16_to_f32(f64_to_f16(f64::NAN)).is_nan());
    }
}

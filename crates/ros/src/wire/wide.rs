//! ROS 2 `wstring` on the wire, and how we tell which of its two forms a recording holds.
//!
//! In plain CDR (XCDR1, the encapsulations we read) a `wstring` is a uint32 length, the
//! number of characters (UTF-16 code units: ROS 2 holds a `wstring` as `std::u16string`; no
//! terminator, never a byte count), then each character as one unit of a size the message
//! does not say. What we found in the writers' sources:
//!
//! - **4 bytes** (a uint32 per UTF-16 code unit) is what every ROS 2 rmw writes on Linux.
//!   rmw_fastrtps up to Iron: the typesupport widens the `u16string` to a `std::wstring`
//!   (`rosidl_typesupport_fastrtps_cpp::u16string_to_wstring`, one `wchar_t` per code unit)
//!   and Fast-CDR 1.x writes each `wchar_t` as a uint32
//!   (<https://github.com/eProsima/Fast-CDR/blob/v1.1.1/include/fastcdr/Cdr.h>,
//!   `serialize(const wchar_t)`; `src/cpp/Cdr.cpp`, `serialize(const wchar_t*)`: the length
//!   is `wcslen`). Jazzy and later (Fast-CDR 2.x) write the uint32 themselves, "for
//!   interoperability with other DDS-based implementations"
//!   (<https://github.com/ros2/rosidl_typesupport_fastrtps/pull/113>,
//!   `serialization_helpers.hpp`, in 3.5.0, before rmw_fastrtps moved to Fast-CDR 2 in
//!   <https://github.com/ros2/rmw_fastrtps/pull/746>; the introspection rmw the same in
//!   <https://github.com/ros2/rmw_fastrtps/pull/740>). rmw_cyclonedds writes each code unit
//!   as a `wchar_t` (`rmw_cyclonedds_cpp/src/Serialization.cpp`, `U16StringValueType`,
//!   `CDR_Legacy`), 4 bytes on Linux.
//! - **2 bytes** (a uint16 per code unit): Fast-CDR 2.x's own `serialize(const wchar_t*)`
//!   (<https://github.com/eProsima/Fast-CDR/blob/v2.3.5/src/cpp/Cdr.cpp>, `wchar_t` as
//!   uint16: a DDS program's own types), and rmw_cyclonedds built where `wchar_t` is 2 bytes
//!   (Windows).
//! - Only rmw_cyclonedds' non-legacy encoding counts bytes; its writer is always made
//!   `CDR_Legacy`, and the other would carry another encapsulation header (which
//!   [`crate::wire::decode`] refuses), so in what we read the length always counts characters.
//!
//! So [`crate::wire::decode::decode_detect`] tries 4 bytes first: see its rule. A 4-byte unit up to
//! 0xFFFF is a UTF-16 code unit (surrogates pair up); 0x10000..=0x10FFFF is taken as a whole
//! character (UTF-32, as a `std::wstring` written by Fast-CDR 1.x on Linux holds); anything
//! else, or an unpaired surrogate, does not decode.

use crate::error::BadChar;

/// How wide one character of a `wstring` is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WideChars {
    /// A uint32 per character (every ROS 2 rmw on Linux, all distributions).
    #[default]
    U32,
    /// A uint16 per UTF-16 code unit (Fast-CDR 2.x's own form; rmw_cyclonedds on Windows).
    U16,
}

impl WideChars {
    /// Bytes per unit on the wire (and its CDR alignment).
    pub fn size(self) -> usize {
        match self {
            WideChars::U32 => 4,
            WideChars::U16 => 2,
        }
    }

    /// In words, for reasons and docs.
    pub fn describe(self) -> &'static str {
        match self {
            WideChars::U32 => "4-byte characters",
            WideChars::U16 => "2-byte characters",
        }
    }
}

/// The characters of a `wstring`'s bytes (a whole number of units): each is a `char` or why
/// it is not one.
pub struct Chars<'a> {
    bytes: &'a [u8],
    wide: WideChars,
    big_endian: bool,
    /// Units read so far.
    at: usize,
}

impl<'a> Chars<'a> {
    pub fn new(bytes: &'a [u8], wide: WideChars, big_endian: bool) -> Self {
        Chars {
            bytes,
            wide,
            big_endian,
            at: 0,
        }
    }

    fn unit(&self, k: usize) -> Option<u32> {
        let n = self.wide.size();
        let b = self.bytes.get(k * n..k * n + n)?;
        let mut v = [0u8; 4];
        if self.big_endian {
            v[4 - n..].copy_from_slice(b);
            Some(u32::from_be_bytes(v))
        } else {
            v[..n].copy_from_slice(b);
            Some(u32::from_le_bytes(v))
        }
    }
}

impl Iterator for Chars<'_> {
    type Item = Result<char, BadChar>;

    fn next(&mut self) -> Option<Self::Item> {
        let k = self.at;
        let u = self.unit(k)?;
        self.at += 1;
        if (0xD800..0xDC00).contains(&u) {
            return Some(match self.unit(k + 1) {
                Some(low @ 0xDC00..=0xDFFF) => {
                    self.at += 1;
                    let c = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
                    Ok(char::from_u32(c).expect("a surrogate pair is a character"))
                }
                _ => Err(BadChar::HighSurrogate { index: k, unit: u }),
            });
        }
        Some(char::from_u32(u).ok_or_else(|| {
            if (0xDC00..0xE000).contains(&u) {
                BadChar::LowSurrogate { index: k, unit: u }
            } else {
                BadChar::BeyondUnicode { index: k, unit: u }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DecodeProblem;
    use crate::typesys::schema::{Dialect, Schema};
    use crate::wire::decode::{decode, decode_detect, Limits, Value, Wire};

    /// A CDR message: encapsulation header, then `body` (built aligned relative to its start).
    struct Cdr {
        be: bool,
        body: Vec<u8>,
    }

    impl Cdr {
        fn new(be: bool) -> Self {
            Cdr { be, body: vec![] }
        }
        fn pad(&mut self, align: usize) {
            while !self.body.len().is_multiple_of(align) {
                self.body.push(0);
            }
        }
        fn u32(&mut self, v: u32) -> &mut Self {
            self.pad(4);
            let b = if self.be {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            self.body.extend(b);
            self
        }
        fn f64(&mut self, v: f64) -> &mut Self {
            self.pad(8);
            let b = if self.be {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            self.body.extend(b);
            self
        }
        /// A wstring of `s` in the form `wide` (UTF-16 code units, as ROS holds them).
        fn wstr(&mut self, s: &str, wide: WideChars) -> &mut Self {
            let units: Vec<u16> = s.encode_utf16().collect();
            self.u32(units.len() as u32);
            for u in units {
                match (wide, self.be) {
                    (WideChars::U32, be) => {
                        let v = u as u32;
                        self.body
                            .extend(if be { v.to_be_bytes() } else { v.to_le_bytes() });
                    }
                    (WideChars::U16, true) => self.body.extend(u.to_be_bytes()),
                    (WideChars::U16, false) => self.body.extend(u.to_le_bytes()),
                }
            }
            self
        }
        fn bytes(&self) -> Vec<u8> {
            let mut m = vec![0, u8::from(!self.be), 0, 0];
            m.extend(&self.body);
            m
        }
    }

    const FORMS: [WideChars; 2] = [WideChars::U32, WideChars::U16];

    fn parse(text: &str) -> Schema {
        Schema::parse("p/W", text, Dialect::Ros2).unwrap()
    }

    fn text(v: &Value, field: &str) -> String {
        v.get(field).unwrap().as_str().unwrap()
    }

    /// A wstring then a float64: the padding after the string depends on the form.
    const W_THEN_F64: &str = "wstring w\nfloat64 x\nwstring e\n";

    #[test]
    fn both_forms_both_byte_orders_with_a_surrogate_pair_and_padding() {
        let s = parse(W_THEN_F64);
        // "é" (2 bytes of UTF-8), "€" (3), "𝄞" (a surrogate pair, 4).
        let word = "aé€𝄞";
        for wide in FORMS {
            for be in [false, true] {
                let m = Cdr::new(be)
                    .wstr(word, wide)
                    .f64(-2.5)
                    .wstr("", wide)
                    .bytes();
                let what = format!("{wide:?} big-endian {be}");
                let v = decode(&s, &m, Wire::Cdr, wide, &Limits::default()).unwrap();
                assert_eq!(text(&v, "w"), word, "{what}");
                assert_eq!(v.get("x").unwrap().as_f64(), Some(-2.5), "{what}");
                assert_eq!(text(&v, "e"), "", "{what}");
                let (v, found) = decode_detect(&s, &m, Wire::Cdr, &Limits::default()).unwrap();
                assert_eq!(found, Some(wide), "{what}: detected");
                assert_eq!(text(&v, "w"), word, "{what}");
                assert_eq!(v.get("x").unwrap().as_f64(), Some(-2.5), "{what}");
            }
        }
    }

    #[test]
    fn empty_wstrings_do_not_decide_the_form() {
        let s = parse(W_THEN_F64);
        let m = Cdr::new(false)
            .wstr("", WideChars::U16)
            .f64(1.0)
            .wstr("", WideChars::U16)
            .bytes();
        let (v, found) = decode_detect(&s, &m, Wire::Cdr, &Limits::default()).unwrap();
        assert_eq!(found, None);
        assert_eq!(text(&v, "w"), "");
        for wide in FORMS {
            let w = decode(&s, &m, Wire::Cdr, wide, &Limits::default()).unwrap();
            for f in ["w", "e"] {
                assert_eq!(text(&w, f), "");
            }
            assert_eq!(w.get("x"), v.get("x"));
        }
    }

    #[test]
    fn sequences_and_arrays_of_wstrings() {
        let s = parse("wstring[] names\nwstring[2] pair\nuint8 k\n");
        let names = ["x", "", "ünï"];
        for wide in FORMS {
            let mut c = Cdr::new(false);
            c.u32(names.len() as u32);
            for n in names {
                c.wstr(n, wide);
            }
            c.wstr("p", wide).wstr("q𝄞", wide);
            c.body.push(9);
            let m = c.bytes();
            let (v, found) = decode_detect(&s, &m, Wire::Cdr, &Limits::default()).unwrap();
            assert_eq!(found, Some(wide));
            let Value::List(items) = v.get("names").unwrap() else {
                panic!("a list")
            };
            let got: Vec<_> = items.iter().map(|i| i.as_str().unwrap()).collect();
            assert_eq!(got, names, "{wide:?}");
            let Value::List(pair) = v.get("pair").unwrap() else {
                panic!("a list")
            };
            assert_eq!(pair[1].as_str().unwrap(), "q𝄞");
            assert_eq!(v.get("k").unwrap().as_u64(), Some(9));
        }
    }

    #[test]
    fn a_bound_or_the_string_limit_exceeded_is_an_error_before_reading() {
        let s = parse("wstring<=3 w\n");
        for wide in FORMS {
            let ok = Cdr::new(false).wstr("abc", wide).bytes();
            decode(&s, &ok, Wire::Cdr, wide, &Limits::default()).unwrap();
            let m = Cdr::new(false).wstr("abcd", wide).bytes();
            let e = decode(&s, &m, Wire::Cdr, wide, &Limits::default()).unwrap_err();
            assert!(
                matches!(
                    e,
                    DecodeProblem::TooLong {
                        got: 4,
                        limit: 3,
                        ..
                    }
                ),
                "{e}"
            );
            assert!(e.to_string().contains("wstring w"), "{e}");
        }
        // The 1 MiB string limit counts bytes: 2^18 4-byte characters reach it.
        let s = parse("wstring w\n");
        let mut m = Cdr::new(false);
        m.u32(u32::MAX);
        let m = m.bytes();
        let e = decode(&s, &m, Wire::Cdr, WideChars::U32, &Limits::default());
        assert!(matches!(e, Err(DecodeProblem::TooLong { limit, .. }) if limit == 1 << 18));
        // Within the limit but more than the message holds.
        let mut m = Cdr::new(false);
        m.u32(1000);
        m.body.extend([0x41, 0, 0, 0]);
        let m = m.bytes();
        let e = decode(&s, &m, Wire::Cdr, WideChars::U32, &Limits::default());
        assert!(matches!(e, Err(DecodeProblem::Truncated { .. })), "{e:?}");
    }

    #[test]
    fn invalid_characters_are_errors_naming_the_field() {
        let s = parse("wstring name\n");
        let cases: [(WideChars, &[u32], &str); 4] = [
            (WideChars::U16, &[0xD834], "high surrogate"),
            (WideChars::U16, &[0xDD1E, 0x41], "low surrogate"),
            (WideChars::U32, &[0x41, 0xD834, 0x41], "high surrogate"),
            (WideChars::U32, &[0x110000], "beyond Unicode"),
        ];
        for (wide, units, why) in cases {
            let mut c = Cdr::new(false);
            c.u32(units.len() as u32);
            for &u in units {
                match wide {
                    WideChars::U32 => c.body.extend(u.to_le_bytes()),
                    WideChars::U16 => c.body.extend((u as u16).to_le_bytes()),
                }
            }
            let e = decode(&s, &c.bytes(), Wire::Cdr, wide, &Limits::default()).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("wstring name") && msg.contains(why), "{msg}");
        }
        // A character past U+FFFF as one 4-byte unit (UTF-32) is a character.
        let mut c = Cdr::new(false);
        c.u32(1).u32(0x1D11E);
        let m = c.bytes();
        let v = decode(&s, &m, Wire::Cdr, WideChars::U32, &Limits::default()).unwrap();
        assert_eq!(text(&v, "name"), "𝄞");
    }

    #[test]
    fn a_message_neither_form_fits_names_the_wstring_field() {
        let s = parse("uint32 a\nwstring label\nuint32 b\n");
        // 3 characters of 3 bytes each: neither 6 (2-byte) nor 12 (4-byte) bytes.
        let mut c = Cdr::new(false);
        c.u32(1).u32(3);
        c.body.extend([0x41, 0, 0x42, 0, 0x43, 0, 0x44, 0, 0x45]);
        let e = decode_detect(&s, &c.bytes(), Wire::Cdr, &Limits::default()).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, DecodeProblem::WideForm { ref field, .. } if field == "label"));
        assert!(msg.contains("4-byte") && msg.contains("2-byte"), "{msg}");
        // A failure before any wstring is not about the form: reported as it is.
        let e = decode_detect(&s, &[0, 1, 0, 0, 1], Wire::Cdr, &Limits::default()).unwrap_err();
        assert!(matches!(e, DecodeProblem::Truncated { .. }), "{e}");
    }

    #[test]
    fn four_byte_messages_also_read_as_two_byte_are_taken_as_four_byte() {
        // "hi" in 4-byte form is 8 bytes; read with 2-byte characters it is "h\0" and 4
        // bytes of what passes for padding: it fits, with a NUL in it. 4 bytes are tried first.
        let s = parse("wstring w\n");
        let m = Cdr::new(false).wstr("hi", WideChars::U32).bytes();
        decode(&s, &m, Wire::Cdr, WideChars::U16, &Limits::default()).unwrap();
        let (v, found) = decode_detect(&s, &m, Wire::Cdr, &Limits::default()).unwrap();
        assert_eq!(
            (found, text(&v, "w").as_str()),
            (Some(WideChars::U32), "hi")
        );
    }

    #[test]
    fn every_cut_is_an_error_not_a_panic() {
        let s = parse(W_THEN_F64);
        for wide in FORMS {
            let m = Cdr::new(true).wstr("a𝄞", wide).f64(1.0).bytes();
            for cut in 0..m.len() {
                assert!(decode_detect(&s, &m[..cut], Wire::Cdr, &Limits::default()).is_err());
            }
        }
    }
}

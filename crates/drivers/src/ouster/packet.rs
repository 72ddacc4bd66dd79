//! The sensor's UDP lidar packets: the layout of each packet profile (byte offsets as
//! ouster-sdk's `PacketFormat` gives them, checked against its packet writer and `FrameBatcher`
//! in tests/interop/driver_ouster.rs), the decoding of one packet's columns, and an encoder
//! (tests and the benchmark make packets with it).
//!
//! A packet holds `columns_per_packet` columns (measurement blocks), each a column header,
//! `pixels_per_column` pixels of 12 bytes, and (legacy) a column footer:
//!
//! | profile | packet header | column header | pixel | column footer | packet footer |
//! | --- | --- | --- | --- | --- | --- |
//! | `LEGACY` | none | timestamp u64, measurement id u16, frame id u16 (the first column's counts), encoder u32 | range u32 (20 bits), reflectivity u16 (8 bits), signal u16, near-IR u16, 2 unused | status u32 | none |
//! | `RNG19_RFL8_SIG16_NIR16` | 32 bytes: packet type u16 (1), frame id u16, init id u24, serial u40, alerts | timestamp u64, measurement id u16, status u16 | range u32 (19 bits), reflectivity u8, 1 unused, signal u16, near-IR u16, 2 unused | none | 32 bytes (CRC-64 on firmware 3) |
//!
//! All little-endian. A column is valid when bit 0 of its status is set; its pixels go to
//! column `measurement id` of the frame (staggered, as the sensor measures them).

/// Bytes of one pixel in both profiles.
const PIXEL_BYTES: usize = 12;

/// The lidar packet profiles this driver decodes (`lidar_data_format.udp_profile_lidar`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Firmware before 2.2, and `LEGACY` on later firmware.
    Legacy,
    /// `RNG19_RFL8_SIG16_NIR16`: single return, the current firmware's default.
    Rng19Rfl8Sig16Nir16,
}

impl Profile {
    /// The profile named as in the sensor's metadata.
    pub fn from_name(name: &str) -> Option<Profile> {
        match name {
            "LEGACY" => Some(Profile::Legacy),
            "RNG19_RFL8_SIG16_NIR16" => Some(Profile::Rng19Rfl8Sig16Nir16),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Profile::Legacy => "LEGACY",
            Profile::Rng19Rfl8Sig16Nir16 => "RNG19_RFL8_SIG16_NIR16",
        }
    }

    fn packet_header(self) -> usize {
        match self {
            Profile::Legacy => 0,
            Profile::Rng19Rfl8Sig16Nir16 => 32,
        }
    }

    fn column_header(self) -> usize {
        match self {
            Profile::Legacy => 16,
            Profile::Rng19Rfl8Sig16Nir16 => 12,
        }
    }

    fn column_footer(self) -> usize {
        match self {
            Profile::Legacy => 4,
            Profile::Rng19Rfl8Sig16Nir16 => 0,
        }
    }

    fn packet_footer(self) -> usize {
        match self {
            Profile::Legacy => 0,
            Profile::Rng19Rfl8Sig16Nir16 => 32,
        }
    }

    fn range_mask(self) -> u32 {
        match self {
            Profile::Legacy => (1 << 20) - 1,
            Profile::Rng19Rfl8Sig16Nir16 => (1 << 19) - 1,
        }
    }
}

/// The shape of a frame and of the packets that carry it (from the sensor's metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub profile: Profile,
    /// Beams: rows of a frame.
    pub pixels_per_column: usize,
    /// Columns of a frame.
    pub columns_per_frame: usize,
    pub columns_per_packet: usize,
    /// The columns the sensor sends, first and last inclusive (may wrap past the last
    /// column to the first).
    pub column_window: (usize, usize),
}

impl Layout {
    fn column_bytes(&self) -> usize {
        self.profile.column_header()
            + self.pixels_per_column * PIXEL_BYTES
            + self.profile.column_footer()
    }

    /// Bytes of one lidar packet.
    pub fn packet_bytes(&self) -> usize {
        self.profile.packet_header()
            + self.columns_per_packet * self.column_bytes()
            + self.profile.packet_footer()
    }

    /// Pixels of one frame.
    pub fn pixels(&self) -> usize {
        self.pixels_per_column * self.columns_per_frame
    }

    /// Whether column `c` is inside the column window.
    pub fn in_window(&self, c: usize) -> bool {
        let (a, b) = self.column_window;
        if a <= b {
            (a..=b).contains(&c)
        } else {
            c >= a || c <= b
        }
    }

    /// Columns the sensor sends per frame (the window's width).
    pub fn window_columns(&self) -> usize {
        let (a, b) = self.column_window;
        if a <= b {
            b - a + 1
        } else {
            self.columns_per_frame - a + b + 1
        }
    }

    /// Packets per frame carrying the window (whole packets of `columns_per_packet`).
    pub fn packets_per_frame(&self) -> usize {
        self.columns_per_frame.div_ceil(self.columns_per_packet)
    }
}

/// Why a datagram on the lidar port was not a lidar packet of the metadata's layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error("{got} bytes, not the {expected} of a {profile} lidar packet ({beams} beams, {columns} columns a packet)", profile = .layout.profile.name(), beams = .layout.pixels_per_column, columns = .layout.columns_per_packet)]
    Size {
        got: usize,
        expected: usize,
        layout: Layout,
    },
    #[error("packet type {got}, not 1 (lidar data)")]
    PacketType { got: u16 },
    #[error("column {column}: measurement id {id} past the frame's {width} columns")]
    MeasurementId {
        column: usize,
        id: usize,
        width: usize,
    },
}

/// One column of a packet: its header and where its pixels start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The sensor's timestamp, ns.
    pub timestamp: u64,
    pub measurement_id: u16,
    /// Bit 0: valid.
    pub status: u32,
    /// Byte offset of the first pixel in the packet.
    pixels: usize,
}

impl Column {
    pub fn valid(&self) -> bool {
        self.status & 1 == 1
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// A lidar packet checked against its layout: its frame id and columns.
#[derive(Debug)]
pub struct Packet<'a> {
    bytes: &'a [u8],
    layout: Layout,
    pub frame_id: u16,
}

impl<'a> Packet<'a> {
    /// Checks the size, the packet type and the measurement ids.
    pub fn parse(bytes: &'a [u8], layout: &Layout) -> Result<Packet<'a>, PacketError> {
        let expected = layout.packet_bytes();
        if bytes.len() != expected {
            return Err(PacketError::Size {
                got: bytes.len(),
                expected,
                layout: *layout,
            });
        }
        let frame_id = match layout.profile {
            // The first column's, as ouster-sdk reads it (its packet writer fills in no other).
            Profile::Legacy => u16_at(bytes, 10),
            Profile::Rng19Rfl8Sig16Nir16 => {
                let kind = u16_at(bytes, 0);
                if kind != 1 {
                    return Err(PacketError::PacketType { got: kind });
                }
                u16_at(bytes, 2)
            }
        };
        let packet = Packet {
            bytes,
            layout: *layout,
            frame_id,
        };
        for column in 0..layout.columns_per_packet {
            let id = packet.column(column).measurement_id as usize;
            if id >= layout.columns_per_frame {
                return Err(PacketError::MeasurementId {
                    column,
                    id,
                    width: layout.columns_per_frame,
                });
            }
        }
        Ok(packet)
    }

    /// Column `i` of the packet (`i < columns_per_packet`).
    pub fn column(&self, i: usize) -> Column {
        let at = self.layout.profile.packet_header() + i * self.layout.column_bytes();
        let b = self.bytes;
        let header = self.layout.profile.column_header();
        let (measurement_id, status) = match self.layout.profile {
            Profile::Legacy => (
                u16_at(b, at + 8),
                u32_at(b, at + header + self.layout.pixels_per_column * PIXEL_BYTES),
            ),
            Profile::Rng19Rfl8Sig16Nir16 => (u16_at(b, at + 8), u16_at(b, at + 10) as u32),
        };
        Column {
            timestamp: u64_at(b, at),
            measurement_id,
            status,
            pixels: at + header,
        }
    }

    /// Writes column `col`'s pixels into the frame's images at its measurement id: range in mm
    /// clipped to 65535 (upstream's `rng`), reflectivity, near-IR.
    pub fn copy_column(&self, col: &Column, images: &mut Images) {
        let w = self.layout.columns_per_frame;
        let c = col.measurement_id as usize;
        let mask = self.layout.profile.range_mask();
        for beam in 0..self.layout.pixels_per_column {
            let p = col.pixels + beam * PIXEL_BYTES;
            let range = u32_at(self.bytes, p) & mask;
            let i = beam * w + c;
            images.rng[i] = range.min(u16::MAX as u32) as u16;
            images.rfl[i] = self.bytes[p + 4];
            images.nir[i] = u16_at(self.bytes, p + 8);
        }
    }
}

/// A frame's images, beams x columns, row-major (staggered: column `c` is measurement `c`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Images {
    /// Range, mm, clipped to 65535.
    pub rng: Vec<u16>,
    /// Calibrated reflectivity.
    pub rfl: Vec<u8>,
    /// Near-infrared ambient photons.
    pub nir: Vec<u16>,
}

impl Images {
    pub fn zeroed(layout: &Layout) -> Images {
        let n = layout.pixels();
        Images {
            rng: vec![0; n],
            rfl: vec![0; n],
            nir: vec![0; n],
        }
    }
}

/// What the encoder puts in a frame's packets: the images and the signal (not stored).
#[derive(Debug, Clone)]
pub struct EncodeFrame<'a> {
    pub frame_id: u16,
    /// Range in mm per pixel (beams x columns), up to the profile's bits.
    pub range: &'a [u32],
    pub rfl: &'a [u8],
    pub nir: &'a [u16],
    /// The first column's timestamp, ns; each column adds `column_ns`.
    pub timestamp: u64,
    pub column_ns: u64,
}

/// The packets of one frame as the sensor sends them: whole packets, in column order, those
/// holding a column of the window; columns outside the window have status 0.
pub fn encode_frame(layout: &Layout, f: &EncodeFrame) -> Vec<Vec<u8>> {
    let w = layout.columns_per_frame;
    let cpp = layout.columns_per_packet;
    let mut packets = Vec::new();
    for first in (0..w).step_by(cpp) {
        if !(first..(first + cpp).min(w)).any(|c| layout.in_window(c)) {
            continue;
        }
        let mut p = vec![0u8; layout.packet_bytes()];
        if layout.profile == Profile::Rng19Rfl8Sig16Nir16 {
            p[0..2].copy_from_slice(&1u16.to_le_bytes());
            p[2..4].copy_from_slice(&f.frame_id.to_le_bytes());
        }
        for i in 0..cpp {
            let c = first + i;
            let at = layout.profile.packet_header() + i * layout.column_bytes();
            let valid = c < w && layout.in_window(c);
            let ts = f.timestamp + c as u64 * f.column_ns;
            p[at..at + 8].copy_from_slice(&ts.to_le_bytes());
            p[at + 8..at + 10].copy_from_slice(&(c.min(w - 1) as u16).to_le_bytes());
            let status_at = match layout.profile {
                Profile::Legacy => {
                    p[at + 10..at + 12].copy_from_slice(&f.frame_id.to_le_bytes());
                    at + layout.column_bytes() - 4
                }
                Profile::Rng19Rfl8Sig16Nir16 => at + 10,
            };
            if !valid {
                continue;
            }
            p[status_at] = 1;
            if layout.profile == Profile::Legacy {
                p[status_at..status_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            }
            let px0 = at + layout.profile.column_header();
            for beam in 0..layout.pixels_per_column {
                let px = px0 + beam * PIXEL_BYTES;
                let k = beam * w + c;
                let range = f.range[k] & layout.profile.range_mask();
                p[px..px + 4].copy_from_slice(&range.to_le_bytes());
                p[px + 4] = f.rfl[k];
                p[px + 8..px + 10].copy_from_slice(&f.nir[k].to_le_bytes());
            }
        }
        packets.push(p);
    }
    packets
}

//! Frames assembled from lidar packets by frame id. A frame is finished when every column of
//! the column window has arrived (complete), or, with columns missing, when a packet of another
//! frame arrives or the sensor goes quiet ([`Assembler::expire`], after a second without packets). Only complete frames are
//! stored: an incomplete one is counted and reported with how many columns it lacked, never
//! written (upstream's collector also keeps only complete scans, `complete=True`).

use super::packet::{Images, Layout, Packet, PacketError};

/// A packet of the last finished frame or of this many before it is late, not a new frame.
const LATE_FRAMES: u16 = 8;

/// A frame being filled.
#[derive(Debug)]
struct Open {
    frame_id: u16,
    /// Host epoch time of its first packet.
    ts: f64,
    images: Images,
    /// Which columns have arrived (valid, inside the window).
    seen: Vec<bool>,
    columns: usize,
}

/// A finished frame.
#[derive(Debug)]
pub enum Finished {
    /// Every column of the window: stored.
    Complete {
        frame_id: u16,
        ts: f64,
        images: Images,
    },
    /// Columns missing: counted, reported, dropped.
    Incomplete {
        frame_id: u16,
        columns: usize,
        expected: usize,
    },
}

/// The counters of a lidar stream (all since the driver started).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub packets: u64,
    /// Datagrams that were not a packet of the layout (wrong size, type, ids).
    pub bad_packets: u64,
    /// Packets of a frame already finished (late or repeated), not used.
    pub late_packets: u64,
    pub complete: u64,
    pub incomplete: u64,
    /// Columns missing from the incomplete frames.
    pub missing_columns: u64,
    /// Frames of which no packet arrived: gaps in the frame ids (a jump of more than
    /// [`MAX_GAP`] is taken for the sensor restarting, not counted).
    pub missing_frames: u64,
}

/// The largest jump in frame ids counted as frames lost (a minute at 20 Hz).
pub const MAX_GAP: u16 = 1200;

/// Assembles frames from packets of one layout (see the module doc).
#[derive(Debug)]
pub struct Assembler {
    layout: Layout,
    expected: usize,
    open: Option<Open>,
    /// The last finished frame's id: its late packets, and those of the few frames before it,
    /// are not a new frame.
    last: Option<u16>,
    /// Late packets in a row: more than a frame's worth means the sensor restarted its frame
    /// ids, and they are frames again.
    late_run: usize,
    /// The last incomplete frame's images, reused for the next frame.
    spare: Option<Images>,
    pub counts: Counts,
}

impl Assembler {
    pub fn new(layout: Layout) -> Assembler {
        Assembler {
            expected: layout.window_columns(),
            layout,
            open: None,
            last: None,
            late_run: 0,
            spare: None,
            counts: Counts::default(),
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Takes one datagram received at host time `ts`; returns the frames it finished (the
    /// open one when this packet starts another, and this packet's frame when it completes
    /// it).
    pub fn push(
        &mut self,
        bytes: &[u8],
        ts: f64,
        out: &mut Vec<Finished>,
    ) -> Result<(), PacketError> {
        self.counts.packets += 1;
        let packet = match Packet::parse(bytes, &self.layout) {
            Ok(p) => p,
            Err(e) => {
                self.counts.bad_packets += 1;
                return Err(e);
            }
        };
        let id = packet.frame_id;
        if self.open.as_ref().is_some_and(|o| o.frame_id != id) {
            out.push(self.finish());
        }
        if self.open.is_none() {
            if self.is_late(id) {
                self.counts.late_packets += 1;
                self.late_run += 1;
                return Ok(());
            }
            self.late_run = 0;
            if let Some(last) = self.last {
                let gap = id.wrapping_sub(last);
                if (2..=MAX_GAP).contains(&gap) {
                    self.counts.missing_frames += u64::from(gap - 1);
                }
            }
            let images = match self.spare.take() {
                Some(mut i) => {
                    i.rng.fill(0);
                    i.rfl.fill(0);
                    i.nir.fill(0);
                    i
                }
                None => Images::zeroed(&self.layout),
            };
            self.open = Some(Open {
                frame_id: id,
                ts,
                images,
                seen: vec![false; self.layout.columns_per_frame],
                columns: 0,
            });
        }
        let open = self.open.as_mut().expect("opened above");
        for i in 0..self.layout.columns_per_packet {
            let col = packet.column(i);
            let c = col.measurement_id as usize;
            if !col.valid() || !self.layout.in_window(c) || open.seen[c] {
                continue;
            }
            packet.copy_column(&col, &mut open.images);
            open.seen[c] = true;
            open.columns += 1;
        }
        if open.columns == self.expected {
            out.push(self.finish());
        }
        Ok(())
    }

    fn is_late(&self, id: u16) -> bool {
        self.last
            .is_some_and(|last| last.wrapping_sub(id) < LATE_FRAMES)
            && self.late_run < self.layout.packets_per_frame()
    }

    /// The sensor went quiet: the open frame, if any, is finished as it is.
    pub fn expire(&mut self) -> Option<Finished> {
        self.open.as_ref()?;
        Some(self.finish())
    }

    fn finish(&mut self) -> Finished {
        let open = self.open.take().expect("a frame is open");
        self.last = Some(open.frame_id);
        if open.columns == self.expected {
            self.counts.complete += 1;
            Finished::Complete {
                frame_id: open.frame_id,
                ts: open.ts,
                images: open.images,
            }
        } else {
            self.counts.incomplete += 1;
            self.counts.missing_columns += (self.expected - open.columns) as u64;
            self.spare = Some(open.images);
            Finished::Incomplete {
                frame_id: open.frame_id,
                columns: open.columns,
                expected: self.expected,
            }
        }
    }
}

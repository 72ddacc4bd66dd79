//! The proof harness of issue 6, shared by `tests/torture/crash.rs`, `overload.rs`, `soak.rs`
//! and `powercut.rs`: a deterministic multi-sensor load against the real daemon binary, and
//! the checks that tell whether what is on disk is exactly what was promised.
//!
//! Every sample is derivable from (sensor, seq): each channel's bytes start with the `seq`
//! (u64) and a per-sensor/channel tag, the rest is a cheap pattern of both, and `ts` is a
//! function of `seq`. So any sample on disk can be checked without keeping copies, and a
//! duplicated, reordered or foreign sample is caught by its header.
//!
//! Size: the CI tests run a few seconds. `ROVERLOG_TORTURE=long` turns every test into its long
//! run (`ROVERLOG_TORTURE_KILLS`, `ROVERLOG_SOAK_SECS`, `ROVERLOG_TORTURE_SEED` override the
//! parts); the figures are printed on stderr (`--nocapture`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use roverlog_client::Driver;
use roverlog_core::format::{
    check_sensor, ChannelFormat, ChannelMeta, DType, Depth, Sensor, SensorMeta,
};

/// Whether the long runs were asked for.
pub fn long() -> bool {
    std::env::var("ROVERLOG_TORTURE").is_ok_and(|v| v == "long")
}

/// A numeric knob from the environment, else `ci` (or `long_default` in a long run).
pub fn knob(name: &str, ci: u64, long_default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) if long() => long_default,
        Err(_) => ci,
    }
}

/// The run's seed: `ROVERLOG_TORTURE_SEED` or the clock; printed so a failure can be replayed.
pub fn seed(test: &str) -> u64 {
    let s = std::env::var("ROVERLOG_TORTURE_SEED")
        .ok()
        .map(|v| v.parse().expect("ROVERLOG_TORTURE_SEED is a u64"))
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("{test}: seed {s} (replay with ROVERLOG_TORTURE_SEED={s})");
    s
}

/// splitmix64: a small, seedable, good-enough generator.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

fn mix(a: u64, b: u64) -> u64 {
    Rng::new(a.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ b).next_u64()
}

/// A channel of a test sensor.
#[derive(Clone, Copy, Debug)]
pub enum Chan {
    /// `raw`, fixed `n` bytes.
    Raw(usize),
    /// `lzmaf`, fixed `n` bytes (compressible, like real sensor data).
    Lzmaf(usize),
    /// `jpg`, variable: `lo..=hi` bytes, chosen by (sensor, seq).
    Jpg(usize, usize),
}

/// A test sensor: its channels, its rate (0: as fast as it can), how often it asks for
/// durability.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub tag: u64,
    pub chans: Vec<Chan>,
    pub rate_hz: f64,
    /// A durability request after a random number of frames in this range (0: never).
    pub sync_every: (u64, u64),
}

impl Spec {
    pub fn new(
        name: &str,
        tag: u64,
        chans: Vec<Chan>,
        rate_hz: f64,
        sync_every: (u64, u64),
    ) -> Spec {
        Spec {
            name: name.into(),
            tag,
            chans,
            rate_hz,
            sync_every,
        }
    }

    pub fn meta(&self) -> SensorMeta {
        let channels = self
            .chans
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (format, n) = match *c {
                    Chan::Raw(n) => (ChannelFormat::Raw, n),
                    Chan::Lzmaf(n) => (ChannelFormat::Lzmaf, n),
                    Chan::Jpg(..) => (ChannelFormat::parse("jpg"), 1),
                };
                (
                    format!("c{i}"),
                    ChannelMeta::new(format, DType::U1, vec![n], "torture"),
                )
            })
            .collect();
        SensorMeta { channels }
    }

    /// Timestamp of sample `seq`.
    pub fn ts(&self, seq: u64) -> f64 {
        1.0e9 + self.tag as f64 * 1000.0 + seq as f64 * 1.0e-3
    }

    fn len_of(&self, ch: usize, seq: u64) -> usize {
        match self.chans[ch] {
            Chan::Raw(n) | Chan::Lzmaf(n) => n,
            Chan::Jpg(lo, hi) => {
                lo + (mix(self.tag * 64 + ch as u64, seq) % (hi - lo + 1) as u64) as usize
            }
        }
    }

    /// The bytes of channel `ch` of sample `seq`, into `out` (cleared first).
    pub fn content(&self, ch: usize, seq: u64, out: &mut Vec<u8>) {
        let n = self.len_of(ch, seq);
        out.clear();
        out.reserve(n);
        let tag = self.tag * 64 + ch as u64;
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&tag.to_le_bytes());
        let s = seq.wrapping_mul(31).wrapping_add(tag.wrapping_mul(13)) as usize;
        match self.chans[ch] {
            // Like the lidar frames of `benches/lzma_codec.rs`: little-endian u16 that vary
            // smoothly, with 4 bits of noise, so compression costs what it costs on real data.
            Chan::Lzmaf(_) => {
                let mut rng = Rng::new(mix(tag, seq));
                let mut noise = 0u64;
                for k in 16..n {
                    if k % 2 == 0 {
                        if k % 32 == 0 {
                            noise = rng.next_u64();
                        }
                        let nib = (noise >> ((k % 32) * 2)) as u8 & 0x0f;
                        out.push(((k >> 1) as u8) << 4 | nib);
                    } else {
                        out.push(((k >> 10) + s) as u8);
                    }
                }
            }
            _ => out.extend((16..n).map(|k| (k.wrapping_mul(7) + s) as u8)),
        }
    }
}

/// What was found on disk for one sensor of one trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnDisk {
    /// Samples.
    pub len: u64,
    /// `seq` of the first sample (None when empty).
    pub first_seq: Option<u64>,
}

/// Checks `<trace>/<sensor>` of `spec`: it validates (`check_sensor`), and every sample from
/// index `from` on has seq `first_seq + index` (when `first_seq` is given; else the first
/// sample's seq), the `ts` of that seq, and in every channel the header of that seq; every
/// `full_every`-th sample (and the last) is compared byte for byte, the others by header.
/// A missing sensor directory is an empty sensor.
pub fn verify_sensor(
    trace: &Path,
    spec: &Spec,
    first_seq: Option<u64>,
    from: u64,
    full_every: u64,
) -> Result<OnDisk, String> {
    let dir = trace.join(&spec.name);
    // No directory, or one whose `meta.json` never arrived: the kill came before or during
    // the sensor's creation (`SensorWriter::create` writes `meta.json` last, and the daemon
    // clears such a directory when the driver comes back). Nothing in it was acknowledged,
    // so it holds no sample; the caller's `len >= acked` check still fails if any was.
    if !dir.join(roverlog_core::format::meta::META_FILE).exists() {
        return Ok(OnDisk {
            len: 0,
            first_seq: None,
        });
    }
    let name = &spec.name;
    let check = check_sensor(&dir, Depth::Structure).map_err(|e| format!("{name}: {e}"))?;
    if !check.is_ok() {
        return Err(format!("{name}: check_sensor: {:?}", check.all_problems()));
    }
    let s = Sensor::open(&dir).map_err(|e| format!("{name}: {e}"))?;
    let ts = s.timestamps().map_err(|e| format!("{name}: {e}"))?;
    let n = ts.len() as u64;
    if n == 0 {
        return Ok(OnDisk {
            len: 0,
            first_seq: None,
        });
    }
    let mut readers = Vec::new();
    for c in 0..spec.chans.len() {
        let mut r = s
            .channel(&format!("c{c}"))
            .map_err(|e| format!("{name}: {e}"))?;
        let len = r.len().map_err(|e| format!("{name}/c{c}: {e}"))?;
        if len != n {
            return Err(format!("{name}/c{c}: {len} samples, ts has {n}"));
        }
        readers.push(r);
    }
    let header_seq =
        |r: &mut roverlog_core::format::ChannelReader, i: u64| -> Result<u64, String> {
            let b = r.get(i).map_err(|e| format!("{name} sample {i}: {e}"))?;
            Ok(u64::from_le_bytes(b[..8].try_into().unwrap()))
        };
    let first = match first_seq {
        Some(f) => f,
        None => header_seq(&mut readers[0], 0)?,
    };
    let mut want = Vec::new();
    for i in from.min(n)..n {
        let seq = first + i;
        if ts[i as usize] != spec.ts(seq) {
            return Err(format!(
                "{name} sample {i}: ts {} is the ts of no expected seq (expected seq {seq}: {})",
                ts[i as usize],
                spec.ts(seq)
            ));
        }
        let full = full_every <= 1 || i % full_every == 0 || i + 1 == n;
        for (c, r) in readers.iter_mut().enumerate() {
            let got = r
                .get(i)
                .map_err(|e| format!("{name}/c{c} sample {i}: {e}"))?;
            let got_seq = u64::from_le_bytes(got[..8].try_into().unwrap());
            if got_seq != seq {
                return Err(format!(
                    "{name}/c{c} sample {i}: holds seq {got_seq}, expected {seq} (duplicate or reordered)"
                ));
            }
            if full {
                spec.content(c, seq, &mut want);
                if *got != want[..] {
                    return Err(format!("{name}/c{c} sample {i} (seq {seq}): bytes differ"));
                }
            }
        }
    }
    Ok(OnDisk {
        len: n,
        first_seq: Some(first),
    })
}

/// What the harness and one driver thread share.
#[derive(Default)]
pub struct DriverState {
    /// Highest durable count the daemon acknowledged (current trace).
    pub acked: AtomicU64,
    /// Next seq after the last frame written whole to the socket.
    pub sent: AtomicU64,
    /// The generation this driver is parked in (its connection failed), `u64::MAX`: running.
    pub parked: AtomicU64,
    pub connects: AtomicU64,
    pub syncs: AtomicU64,
    /// Time spent blocked in `write` (backpressure), microseconds.
    pub write_wait_us: AtomicU64,
    /// Time spent waiting for durability replies, microseconds.
    pub sync_wait_us: AtomicU64,
    /// Broken promises seen by the driver itself (hello reply, durable replies).
    pub violations: Mutex<Vec<String>>,
}

/// The harness's side: a generation counter (bumped when the daemon is up again), the
/// generation whose daemon the harness is killing (a connection failing in any other is a
/// violation), and stop.
pub struct Control {
    pub gen: AtomicU64,
    pub killing: AtomicU64,
    pub stop: AtomicBool,
}

impl Default for Control {
    fn default() -> Control {
        Control {
            gen: AtomicU64::new(0),
            killing: AtomicU64::new(u64::MAX),
            stop: AtomicBool::new(false),
        }
    }
}

/// A driver thread: (re)connects in each generation, resumes at the hello's `samples` (the
/// seq numbering is the sample index of the trace, when `seq_is_index`), sends paced frames
/// with random durability requests, and parks when its connection fails until the harness
/// bumps the generation. With `count`, it stops after that many frames. At stop it asks for
/// durability once more.
pub struct DriverThread {
    pub spec: Spec,
    pub state: Arc<DriverState>,
    pub handle: Option<std::thread::JoinHandle<()>>,
}

pub fn spawn_driver(
    socket: &Path,
    spec: Spec,
    seed: u64,
    ctl: Arc<Control>,
    count: Option<u64>,
    seq_is_index: bool,
) -> DriverThread {
    let state = Arc::new(DriverState {
        parked: AtomicU64::new(u64::MAX),
        ..Default::default()
    });
    let (st, sp, socket) = (state.clone(), spec.clone(), socket.to_path_buf());
    let handle = std::thread::Builder::new()
        .name(format!("driver-{}", spec.name))
        .spawn(move || drive(&socket, &sp, seed, &ctl, &st, count, seq_is_index))
        .unwrap();
    DriverThread {
        spec,
        state,
        handle: Some(handle),
    }
}

fn violation(st: &DriverState, msg: String) {
    eprintln!("VIOLATION {msg}");
    st.violations.lock().unwrap().push(msg);
}

fn drive(
    socket: &Path,
    spec: &Spec,
    seed: u64,
    ctl: &Control,
    st: &DriverState,
    count: Option<u64>,
    seq_is_index: bool,
) {
    let mut rng = Rng::new(seed ^ spec.tag.wrapping_mul(0x1234_5678_9abc));
    let meta = spec.meta();
    let mut bufs: Vec<Vec<u8>> = vec![Vec::new(); spec.chans.len()];
    let mut next_seq = 0u64;
    loop {
        let g = ctl.gen.load(SeqCst);
        let mut session = || -> Result<bool, String> {
            let (mut d, hello) =
                Driver::connect(socket, &spec.name, &meta, true).map_err(|e| e.to_string())?;
            st.connects.fetch_add(1, SeqCst);
            if seq_is_index {
                let acked = st.acked.load(SeqCst);
                let sent = st.sent.load(SeqCst);
                if hello.samples < acked || hello.samples > sent {
                    violation(
                        st,
                        format!(
                            "{}: hello says {} samples; acknowledged {acked}, sent {sent}",
                            spec.name, hello.samples
                        ),
                    );
                }
                next_seq = hello.samples;
                st.sent.store(next_seq, SeqCst);
            }
            let t0 = Instant::now();
            let first = next_seq;
            let mut until_sync = next_sync(&mut rng, spec);
            loop {
                if ctl.stop.load(SeqCst) || count.is_some_and(|c| next_seq >= c) {
                    let durable = d.sync().map_err(|e| e.to_string())?;
                    note_durable(st, spec, durable, seq_is_index);
                    return Ok(true);
                }
                if spec.rate_hz > 0.0 {
                    let due =
                        t0 + Duration::from_secs_f64((next_seq - first) as f64 / spec.rate_hz);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep((due - now).min(Duration::from_millis(50)));
                        continue;
                    }
                }
                for (c, b) in bufs.iter_mut().enumerate() {
                    spec.content(c, next_seq, b);
                }
                let refs: Vec<&[u8]> = bufs.iter().map(|b| &b[..]).collect();
                let w0 = Instant::now();
                d.send(spec.ts(next_seq), Some(next_seq), &refs)
                    .map_err(|e| e.to_string())?;
                st.write_wait_us
                    .fetch_add(w0.elapsed().as_micros() as u64, SeqCst);
                next_seq += 1;
                st.sent.store(next_seq, SeqCst);
                if until_sync > 0 {
                    until_sync -= 1;
                    if until_sync == 0 {
                        let w0 = Instant::now();
                        let durable = d.sync().map_err(|e| e.to_string())?;
                        st.sync_wait_us
                            .fetch_add(w0.elapsed().as_micros() as u64, SeqCst);
                        st.syncs.fetch_add(1, SeqCst);
                        note_durable(st, spec, durable, seq_is_index);
                        until_sync = next_sync(&mut rng, spec);
                    }
                }
            }
        };
        match session() {
            Ok(_) => return,
            Err(e) => {
                if ctl.killing.load(SeqCst) != g {
                    violation(
                        st,
                        format!("{}: connection failed with no kill: {e}", spec.name),
                    );
                }
                st.parked.store(g, SeqCst);
                while ctl.gen.load(SeqCst) == g && !ctl.stop.load(SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if ctl.stop.load(SeqCst) && ctl.gen.load(SeqCst) == g {
                    return;
                }
                st.parked.store(u64::MAX, SeqCst);
            }
        }
    }
}

fn next_sync(rng: &mut Rng, spec: &Spec) -> u64 {
    match spec.sync_every {
        (0, _) => 0,
        (lo, hi) => rng.range(lo, hi),
    }
}

fn note_durable(st: &DriverState, spec: &Spec, durable: u64, seq_is_index: bool) {
    let sent = st.sent.load(SeqCst);
    let prev = st.acked.load(SeqCst);
    if seq_is_index && (durable > sent || durable < prev) {
        violation(
            st,
            format!(
                "{}: durable {durable} with {sent} sent and {prev} acknowledged before",
                spec.name
            ),
        );
    }
    st.acked.fetch_max(durable, SeqCst);
}

/// Waits until every driver is parked in generation `g` (their connections failed).
pub fn wait_parked(drivers: &[DriverThread], g: u64) {
    let t0 = Instant::now();
    while !drivers.iter().all(|d| d.state.parked.load(SeqCst) == g) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "drivers did not notice the kill"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Stops the drivers (each syncs once more) and joins them.
pub fn stop_drivers(ctl: &Control, drivers: &mut [DriverThread]) {
    ctl.stop.store(true, SeqCst);
    for d in drivers.iter_mut() {
        d.handle.take().unwrap().join().unwrap();
    }
}

/// Every violation a driver saw.
pub fn violations(drivers: &[DriverThread]) -> Vec<String> {
    drivers
        .iter()
        .flat_map(|d| d.state.violations.lock().unwrap().clone())
        .collect()
}

/// Open file descriptors of a process.
pub fn fd_count(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// min / median / max.
pub fn min_med_max(v: &[u64]) -> (u64, u64, u64) {
    let mut s = v.to_vec();
    s.sort_unstable();
    if s.is_empty() {
        return (0, 0, 0);
    }
    (s[0], s[s.len() / 2], s[s.len() - 1])
}

/// The seqs held by `<trace>/<sensor>`, in file order, after checking that the sensor
/// validates, the seqs strictly increase, and every sample has its seq's `ts` and exact bytes
/// in every channel. For sensors that may miss samples (the `drop` policy).
pub fn seqs_on_disk(trace: &Path, spec: &Spec) -> Result<Vec<u64>, String> {
    let dir = trace.join(&spec.name);
    let name = &spec.name;
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let check = check_sensor(&dir, Depth::Structure).map_err(|e| format!("{name}: {e}"))?;
    if !check.is_ok() {
        return Err(format!("{name}: check_sensor: {:?}", check.all_problems()));
    }
    let s = Sensor::open(&dir).map_err(|e| format!("{name}: {e}"))?;
    let ts = s.timestamps().map_err(|e| format!("{name}: {e}"))?;
    let mut seqs = Vec::with_capacity(ts.len());
    let mut want = Vec::new();
    for c in 0..spec.chans.len() {
        let mut r = s
            .channel(&format!("c{c}"))
            .map_err(|e| format!("{name}: {e}"))?;
        for i in 0..ts.len() as u64 {
            let got = r
                .get(i)
                .map_err(|e| format!("{name}/c{c} sample {i}: {e}"))?;
            let seq = u64::from_le_bytes(got[..8].try_into().unwrap());
            if c == 0 {
                if seqs.last().is_some_and(|&p| p >= seq) {
                    return Err(format!(
                        "{name} sample {i}: seq {seq} after {:?}",
                        seqs.last()
                    ));
                }
                if ts[i as usize] != spec.ts(seq) {
                    return Err(format!("{name} sample {i}: ts does not match seq {seq}"));
                }
                seqs.push(seq);
            } else if seqs[i as usize] != seq {
                return Err(format!(
                    "{name}/c{c} sample {i}: seq {seq}, channel c0 has {}",
                    seqs[i as usize]
                ));
            }
            spec.content(c, seq, &mut want);
            if *got != want[..] {
                return Err(format!("{name}/c{c} sample {i} (seq {seq}): bytes differ"));
            }
        }
        let n = r.len().map_err(|e| format!("{name}/c{c}: {e}"))?;
        if n != ts.len() as u64 {
            return Err(format!("{name}/c{c}: {n} samples, ts has {}", ts.len()));
        }
    }
    Ok(seqs)
}

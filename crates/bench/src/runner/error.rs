//! Why `roverlog bench` could not run (its exit code 2), as redb does errors: one small enum
//! per operation ([`UsageError`] for the options, [`DaemonError`] for the daemon under test,
//! [`CommandError`] for a command run to completion, [`PeerError`] for processes started
//! together, [`ViewerError`] for the dashboard and Foxglove clients, [`ScenarioError`] for a
//! scenario's own steps and checks, [`FaultError`] for `--only faults`), each converting with
//! `From` into the runner's [`RunError`]; the bench's load and baseline errors
//! ([`crate::error::Error`]), roverlog-core's and the client's convert into it too.
//!
//! Each message holds what it is about (the option, the file, the command and its exit
//! status, the scenario, the peer and its log) and the error under it, so the one line the
//! runner prints (`roverlog bench: error: ...`) reads as the chain of what it was doing; the
//! texts are those the runner printed before it had types.

use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use serde_json::Value;

use super::BaselineError;
use crate::offload::OffloadBenchError;

/// Result alias of the runner.
pub type Result<T, E = RunError> = std::result::Result<T, E>;

/// Everything that stops a `roverlog bench` scenario from running.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A bad option (or a combination of them).
    #[error(transparent)]
    Usage(Box<UsageError>),
    /// The daemon under test: its config, start, readiness, control socket or stop.
    #[error(transparent)]
    Daemon(Box<DaemonError>),
    /// A command the bench runs to completion (a verb, a converter, a reader of its output).
    #[error(transparent)]
    Command(Box<CommandError>),
    /// Processes started together (the rig's drivers, the Python writers).
    #[error(transparent)]
    Peers(Box<PeerError>),
    /// A client of what the daemon shows (the dashboard, the live Foxglove feed).
    #[error(transparent)]
    Viewer(Box<ViewerError>),
    /// A scenario's own step or check.
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
    /// `--only faults`: a failing disk could not be set up or did not fail as asked.
    #[error(transparent)]
    Fault(Box<FaultError>),
    /// The load generator, a baseline or the rig's frames ([`crate::error::Error`]).
    #[error(transparent)]
    Bench(Box<crate::error::Error>),
    /// A baseline the scenario cannot do without (the Python writer of the rig's peer).
    #[error(transparent)]
    Baseline(Box<BaselineError>),
    /// `--only offload`.
    #[error(transparent)]
    Offload(Box<OffloadBenchError>),
    /// A trace written or read, or the daemon's config.
    #[error(transparent)]
    Core(Box<roverlog_core::Error>),
    /// A file or directory of the bench's own (`doing`: creating, writing, reading...).
    #[error("{doing} {}: {error}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        error: io::Error,
    },
    /// The daemon's config the bench wrote did not load.
    #[error(transparent)]
    DaemonConfig(Box<roverlog_daemon::error::Error>),
    /// Talking to the daemon as a driver.
    #[error(transparent)]
    Client(Box<roverlog_client::Error>),
    /// This executable (which runs the daemon, the verbs and the rig's drivers) not found.
    #[error("finding this executable: {0}")]
    Exe(io::Error),
}

impl RunError {
    /// An I/O error `doing` something to `path`.
    pub fn io(doing: &'static str, path: impl Into<PathBuf>, error: io::Error) -> Self {
        RunError::Io {
            doing,
            path: path.into(),
            error,
        }
    }
}

/// `From` each operation's error: boxed, so a `Result` of the runner stays small.
macro_rules! boxed_from {
    ($($error:ty => $variant:ident),* $(,)?) => {
        $(impl From<$error> for RunError {
            fn from(e: $error) -> Self {
                RunError::$variant(Box::new(e))
            }
        })*
    };
}

boxed_from! {
    UsageError => Usage,
    DaemonError => Daemon,
    CommandError => Command,
    PeerError => Peers,
    ViewerError => Viewer,
    ScenarioError => Scenario,
    FaultError => Fault,
    crate::error::Error => Bench,
    BaselineError => Baseline,
    OffloadBenchError => Offload,
    roverlog_core::Error => Core,
    roverlog_client::Error => Client,
    roverlog_daemon::error::Error => DaemonConfig,
}

/// This executable's path (the daemon, the verbs and the rig's drivers are run from it).
pub(super) fn current_exe() -> Result<PathBuf> {
    std::env::current_exe().map_err(RunError::Exe)
}

/// A bad option of `roverlog bench`.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// `--only` names a scenario that runs alone with others (`usage`: its table's text).
    #[error("{usage}")]
    NotAlone {
        scenario: &'static str,
        usage: &'static str,
    },
    /// `--only` names no scenario of the table.
    #[error("unknown scenario {name:?} (known: {}, rig)", known.join(", "))]
    UnknownScenario {
        name: String,
        known: Vec<&'static str>,
    },
    /// A count that must be at least 1 (`--sensors`, `--rounds`, `--lidar-frames`).
    #[error("{option} must be at least 1")]
    Zero { option: &'static str },
    /// `--frame-bytes` out of range.
    #[error("--frame-bytes must be 1..={max}, got {got}")]
    FrameBytes { got: usize, max: usize },
    /// `--rig-seconds` zero, negative or not a number.
    #[error("--rig-seconds must be positive, got {got}")]
    RigSeconds { got: f64 },
    /// `--minutes` (soak) out of range.
    #[error("--minutes must be over 0 and at most a day, got {got}")]
    Minutes { got: f64 },
    /// `--daemon-config` is not JSON.
    #[error("--daemon-config: {0}")]
    DaemonConfigJson(serde_json::Error),
    /// `--daemon-config` is JSON but not an object.
    #[error("--daemon-config: want a JSON object, got {got}")]
    DaemonConfigNotObject { got: Value },
    /// `bench-rig-driver --stream` names no rig stream.
    #[error("unknown stream {stream:?} (camera, lidar, radar, imu)")]
    UnknownStream { stream: String },
    /// `--disk DIR` is not a directory.
    #[error("{}: not a directory", dir.display())]
    DiskNotADirectory { dir: PathBuf },
    /// `--disk`'s `--load-mbps`, `--sensor-mbps` (as given, or `--load-mbps` when not) or
    /// `--disk-mib` zero, negative or not a number.
    #[error("--load-mbps, --sensor-mbps and --disk-mib must be positive")]
    DiskNotPositive {
        load_mbps: f64,
        sensor_mbps: f64,
        disk_mib: u64,
    },
    /// `--disk`'s busiest sensor over the whole load.
    #[error("--sensor-mbps ({sensor_mbps}) is one sensor's share of --load-mbps ({load_mbps}): it cannot be more")]
    SensorOverLoad { sensor_mbps: f64, load_mbps: f64 },
}

/// The daemon under test (`roverlog daemon`, this executable, as a child process).
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// It could not be started (`program`: this executable, or `fiu-run` wrapping it;
    /// `hint`: where that comes from).
    #[error("starting roverlog daemon ({}{hint}): {error}", program.display())]
    Start {
        program: PathBuf,
        hint: &'static str,
        error: io::Error,
    },
    /// It exited before it was ready (`log_text`: its log, whole).
    #[error("the daemon exited at start ({status}); its log {}:\n{log_text}", log.display())]
    ExitedAtStart {
        status: ExitStatus,
        log: PathBuf,
        log_text: String,
    },
    /// It did not answer `status` (or, `recording`, report its trace) in time; killed.
    #[error("the daemon did not {} within {within_s} s", if *recording { "record" } else { "become ready" })]
    NotReady { within_s: u64, recording: bool },
    /// Its state could not be read (`waitpid`).
    #[error("waiting for the daemon: {0}")]
    Wait(io::Error),
    /// It did not exit in time after SIGTERM.
    #[error("the daemon did not stop within {within_s} s of SIGTERM")]
    NoStop { within_s: u64 },
    /// It exited with something else than 0 after SIGTERM (`None`: killed).
    #[error("the daemon exited with {exit:?} after SIGTERM; see {}", log.display())]
    BadExit { exit: Option<i32>, log: PathBuf },
    /// A control command (`cmd`) that got no reply on `socket`.
    #[error("control socket {}: {cmd}: {error}", socket.display())]
    Control {
        socket: PathBuf,
        cmd: Value,
        error: io::Error,
    },
    /// A control reply that is not JSON.
    #[error("control socket {}: {cmd}: the reply {reply:?} is not JSON: {error}", socket.display())]
    ControlReply {
        socket: PathBuf,
        cmd: Value,
        reply: String,
        error: serde_json::Error,
    },
    /// Its `status` lacks the address of a listener the scenario asked for (`keys`).
    #[error("the {scenario} scenario's daemon reports no {keys}: {status}")]
    NoUrl {
        scenario: &'static str,
        keys: &'static str,
        status: Value,
    },
}

/// A command the bench runs to completion (`command`: what it is, as printed).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("starting {command}: {error}")]
    Start { command: String, error: io::Error },
    #[error("waiting for {command}: {error}")]
    Wait { command: String, error: io::Error },
    /// It exited unsuccessfully (`stderr`: what it printed, trimmed).
    #[error("{command} failed ({status:?}): {stderr}")]
    Failed {
        command: String,
        status: ExitStatus,
        stderr: String,
    },
    /// It ran past `limit` and was killed (`log`: where its stderr went).
    #[error("{command} did not finish within {limit:?}; its log: {}", log.display())]
    TimedOut {
        command: String,
        limit: std::time::Duration,
        log: PathBuf,
    },
    /// It succeeded but the file it was to write is not there.
    #[error("{command} wrote no {}: {error}", path.display())]
    NoOutput {
        command: String,
        path: PathBuf,
        error: io::Error,
    },
}

/// Processes started together (`peers::run_together`): `group` names the run
/// (`rig-1`, `python-2`), `peer` the process (its stream).
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("starting {group} {peer}: {command}: {error}")]
    Start {
        group: String,
        peer: String,
        command: String,
        error: io::Error,
    },
    /// A peer went wrong (`tail`: the last lines of its log).
    #[error("{group} {peer}: {problem}; its log {}:\n{tail}", log.display())]
    Failed {
        group: String,
        peer: String,
        problem: PeerProblem,
        log: PathBuf,
        tail: String,
    },
    /// Peers (`late`) not ready within `within_s`.
    #[error("{group}: {} not ready within {within_s} s", late.join(", "))]
    NotReady {
        group: String,
        late: Vec<String>,
        within_s: u64,
    },
    /// Peers (`late`) without a result `within_s` after `go`.
    #[error("{group}: {} did not finish within {within_s} s of the start", late.join(", "))]
    NotFinished {
        group: String,
        late: Vec<String>,
        within_s: u64,
    },
    /// `go` could not be written to a peer's stdin.
    #[error("releasing {group} {peer}: {error}")]
    Release {
        group: String,
        peer: String,
        error: io::Error,
    },
}

/// What a peer did wrong ([`PeerError::Failed`]).
#[derive(Debug, thiserror::Error)]
pub enum PeerProblem {
    #[error("printed {line:?} before \"ready\"")]
    BeforeReady { line: String },
    #[error("exited before it was ready")]
    ExitedBeforeReady,
    #[error("printed {line:?}: {error}")]
    NotJson {
        line: String,
        error: serde_json::Error,
    },
    #[error("exited without a result")]
    NoResult,
    #[error("exited with {0}")]
    Exit(ExitStatus),
    #[error("waiting for it: {0}")]
    Wait(io::Error),
}

/// The `dashboard` and `foxglove` scenarios' clients, and the soak's.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    #[error("connecting to the dashboard at {addr}: {error}")]
    DashboardConnect { addr: String, error: io::Error },
    /// The request could not be sent, or its answer read.
    #[error("reading the dashboard's answer to {path}: {error}")]
    DashboardRead {
        path: &'static str,
        error: io::Error,
    },
    /// An answer other than 200 (`head`: its first 200 bytes).
    #[error("dashboard {path}: {head}")]
    DashboardStatus { path: &'static str, head: String },
    #[error("the Foxglove feed's url {url}: {error}")]
    FeedUrl {
        url: String,
        error: Box<tungstenite::Error>,
    },
    #[error("connecting to the Foxglove feed at {addr}: {error}")]
    FeedConnect { addr: String, error: io::Error },
    #[error("the WebSocket handshake with {url}: {error}")]
    Handshake {
        url: String,
        error: Box<tungstenite::HandshakeError<tungstenite::ClientHandshake<std::net::TcpStream>>>,
    },
    #[error("reading the Foxglove feed: {0}")]
    FeedRead(Box<tungstenite::Error>),
    #[error("a Foxglove server message: {0}")]
    FeedMessage(serde_json::Error),
    #[error("an advertised channel without an id: {channel}")]
    ChannelWithoutId { channel: Value },
    #[error("subscribing to the Foxglove feed: {0}")]
    Subscribe(Box<tungstenite::Error>),
    /// The client's thread panicked (`client`: which).
    #[error("the {client} panicked")]
    Panicked { client: &'static str },
    /// The client got nothing while the load ran.
    #[error("{scenario}: the client saw nothing while the load ran")]
    SawNothing { scenario: &'static str },
}

/// A scenario's own steps and checks.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The load generator failed.
    #[error("driving {scenario}: {error}")]
    Drive {
        scenario: &'static str,
        error: Box<crate::error::Error>,
    },
    /// A sensor of the load acknowledged short of what was sent.
    #[error("{sensor}: durable {durable} < sent {sent}")]
    NotDurable {
        sensor: String,
        durable: u64,
        sent: u64,
    },
    /// dd's random source could not be made.
    #[error("the dd source: {0}")]
    DdSource(Box<crate::error::Error>),
    /// A channel of a trace the bench reads (`channel`: its sensor directory and name).
    #[error("{}: {error}", channel.display())]
    Read {
        channel: PathBuf,
        error: Box<roverlog_core::Error>,
    },
    /// The soak's sensor `sensor` could not connect.
    #[error("connecting sensor {sensor}: {error}")]
    Connect {
        sensor: &'static str,
        error: Box<roverlog_client::Error>,
    },
    /// The soak's sensor `sensor` failed to send its frame `frame`.
    #[error("sensor {sensor} frame {frame}: {error}")]
    Send {
        sensor: &'static str,
        frame: u64,
        error: Box<roverlog_client::Error>,
    },
    /// The soak's sensor `sensor` failed its final sync.
    #[error("sensor {sensor} final sync: {error}")]
    Sync {
        sensor: &'static str,
        error: Box<roverlog_client::Error>,
    },
    /// A trace's events could not be read.
    #[error("{}: {error}", trace.display())]
    Events {
        trace: PathBuf,
        error: Box<roverlog_core::Error>,
    },
    /// `--upstream-python` cannot run upstream's writers.
    #[error("{} cannot import roverd and cv2 (upstream's format package with its video extra): {stderr}", python.display())]
    UpstreamPython { python: PathBuf, stderr: String },
    /// A rig driver could not read its `go` line.
    #[error("reading \"go\" from stdin: {0}")]
    Go(io::Error),
}

/// `--only faults`: a failing disk that could not be set up, or did not fail.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// One round of a fault scenario failed.
    #[error("{scenario} round {round}: {error}")]
    Round {
        scenario: &'static str,
        round: usize,
        error: Box<RunError>,
    },
    /// A tool (`mkfs.ext4`, `mount`, `fiu-ctrl`) could not be run.
    #[error("running {command} (roverlog bench --only faults needs root, mkfs.ext4, fiu-utils): {error}")]
    Tool { command: String, error: io::Error },
    /// A tool exited unsuccessfully (`stderr`: what it printed).
    #[error("{command}: {stderr}")]
    ToolFailed { command: String, stderr: String },
    /// The daemon acknowledged nothing before the fault was armed.
    #[error("recording before the fault: the daemon acknowledged no sync")]
    NoAckBeforeFault,
    /// Sending went on `within_s` without a failure.
    #[error("the fault never showed (within {within_s} s)")]
    NeverShowed { within_s: u64 },
    #[error("EXT4_IOC_SHUTDOWN on {}: {error}", fs.display())]
    Shutdown { fs: PathBuf, error: io::Error },
    #[error("no VmHWM in /proc/{pid}/status")]
    NoHwm { pid: u32 },
    #[error("{}: the daemon's trace directory has no name", trace.display())]
    TraceName { trace: PathBuf },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the runner printed when these were strings, it prints still.
    #[test]
    fn the_usage_texts_are_unchanged() {
        let e = RunError::from(UsageError::UnknownScenario {
            name: "nosuch".into(),
            known: vec!["large", "imu"],
        });
        assert_eq!(
            e.to_string(),
            "unknown scenario \"nosuch\" (known: large, imu, rig)"
        );
        let e = RunError::from(UsageError::Zero { option: "--rounds" });
        assert_eq!(e.to_string(), "--rounds must be at least 1");
        let e = RunError::from(UsageError::FrameBytes { got: 0, max: 10 });
        assert_eq!(e.to_string(), "--frame-bytes must be 1..=10, got 0");
        let e = RunError::from(UsageError::DaemonConfigNotObject {
            got: serde_json::json!([1]),
        });
        assert_eq!(
            e.to_string(),
            "--daemon-config: want a JSON object, got [1]"
        );
    }

    /// A failed peer names its group, itself, what it did and where its log is.
    #[test]
    fn a_failed_peer_names_itself_and_its_log() {
        let e = RunError::from(PeerError::Failed {
            group: "rig-1".into(),
            peer: "lidar".into(),
            problem: PeerProblem::BeforeReady {
                line: "hello".into(),
            },
            log: "/w/rig-1-lidar.log".into(),
            tail: "boom".into(),
        });
        assert_eq!(
            e.to_string(),
            "rig-1 lidar: printed \"hello\" before \"ready\"; its log /w/rig-1-lidar.log:\nboom"
        );
        let e = RunError::from(PeerError::NotReady {
            group: "python-2".into(),
            late: vec!["camera".into(), "imu".into()],
            within_s: 300,
        });
        assert_eq!(
            e.to_string(),
            "python-2: camera, imu not ready within 300 s"
        );
    }

    /// A wrapped error keeps the chain in one line: the round, then what failed in it.
    #[test]
    fn a_round_reads_as_the_chain() {
        let inner = RunError::from(DaemonError::NoStop { within_s: 60 });
        let e = RunError::from(FaultError::Round {
            scenario: "enospc",
            round: 2,
            error: Box::new(inner),
        });
        assert_eq!(
            e.to_string(),
            "enospc round 2: the daemon did not stop within 60 s of SIGTERM"
        );
        let io = io::Error::new(io::ErrorKind::NotFound, "no such file");
        let e = RunError::io("creating", "/w/x.log", io);
        assert_eq!(e.to_string(), "creating /w/x.log: no such file");
    }
}

//! A V4L2 capture device as a [`FrameSource`]: opened (non-blocking), asked what it is
//! (`VIDIOC_QUERYCAP`: a single-planar video capture device with streaming I/O), its MJPG
//! modes listed (`ENUM_FMT`, `ENUM_FRAMESIZES`, `ENUM_FRAMEINTERVALS`) and one chosen
//! ([`modes::select`]), set (`S_FMT`, `S_PARM`), mmap buffers requested, mapped and queued
//! (`REQBUFS`, `QUERYBUF`, `QBUF`), streamed (`STREAMON`); then each [`FrameSource::next`]
//! gives the previous buffer back (`QBUF`), waits in `poll` (200 ms at a time, looking at the
//! stop flag and the stall timeout) and dequeues (`DQBUF`). Dropping it stops the stream and
//! unmaps the buffers.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::modes::{self, Interval, Mode, ModeError, Want};
use super::sys::{self, ioctl, zeroed};
use super::{Dequeued, FrameSource, Next, SourceError};

/// How often a wait for a buffer looks at the stop flag.
const POLL: Duration = Duration::from_millis(200);

/// Why the device could not be opened for MJPG capture.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("{device}: opening: {error}")]
    Open { device: String, error: io::Error },
    #[error("{device}: not a V4L2 device (VIDIOC_QUERYCAP: {error})")]
    NotV4l2 { device: String, error: io::Error },
    #[error("{device} ({card}): not a video capture device (device capabilities {caps:#010x}){}",
        if caps & sys::V4L2_CAP_VIDEO_CAPTURE_MPLANE != 0 { "; multi-planar capture is not supported" } else { "" })]
    NotCapture {
        device: String,
        card: String,
        caps: u32,
    },
    #[error("{device} ({card}): no streaming I/O (V4L2_CAP_STREAMING), which mmap buffers need")]
    NoStreaming { device: String, card: String },
    #[error("{device} ({card}): no MJPG format (it offers {})",
        if offered.is_empty() { "none".to_string() } else { offered.join(", ") })]
    NoMjpeg {
        device: String,
        card: String,
        offered: Vec<String>,
    },
    #[error("{device}: {error}")]
    Mode { device: String, error: ModeError },
    #[error("{device}: asked for MJPG {}x{}, the driver set {got_format} {}x{}",
        .asked.0, .asked.1, .got.0, .got.1)]
    FormatRefused {
        device: String,
        asked: (u32, u32),
        got_format: String,
        got: (u32, u32),
    },
    #[error("{device}: the driver gave {got} buffers (at least 2 are needed)")]
    TooFewBuffers { device: String, got: u32 },
    #[error("{device}: mmap of buffer {index} ({length} bytes): {error}")]
    Mmap {
        device: String,
        index: u32,
        length: u32,
        error: io::Error,
    },
    #[error("{device}: {call}: {error}")]
    Ioctl {
        device: String,
        call: &'static str,
        error: io::Error,
    },
}

/// What [`Device::open`] asks of the camera.
#[derive(Debug, Clone, Copy)]
pub struct DeviceOptions {
    pub want: Want,
    /// mmap buffers requested (the driver may give more or fewer; fewer than 2 is an error).
    pub buffers: u32,
    /// No buffer for this long ends the stream.
    pub stall_timeout: Duration,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        DeviceOptions {
            want: Want::default(),
            buffers: 4,
            stall_timeout: Duration::from_secs(5),
        }
    }
}

/// One mmap'd buffer, unmapped on drop.
struct Mapped {
    ptr: *mut u8,
    len: usize,
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are one live mapping made by `mmap` in `Device::open`, unmapped
        // only here.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// What `VIDIOC_QUERYCAP` said, as the checks need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    pub card: String,
    pub driver: String,
    /// The device node's capabilities (`device_caps` when the driver fills it).
    pub caps: u32,
}

impl Caps {
    pub fn from_sys(c: &sys::v4l2_capability) -> Caps {
        let text = |b: &[u8]| {
            let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).into_owned()
        };
        Caps {
            card: text(&c.card),
            driver: text(&c.driver),
            caps: if c.capabilities & sys::V4L2_CAP_DEVICE_CAPS != 0 {
                c.device_caps
            } else {
                c.capabilities
            },
        }
    }

    /// A single-planar capture device with streaming I/O, or the error naming what it lacks.
    pub fn check(&self, device: &str) -> Result<(), DeviceError> {
        if self.caps & sys::V4L2_CAP_VIDEO_CAPTURE == 0 {
            return Err(DeviceError::NotCapture {
                device: device.into(),
                card: self.card.clone(),
                caps: self.caps,
            });
        }
        if self.caps & sys::V4L2_CAP_STREAMING == 0 {
            return Err(DeviceError::NoStreaming {
                device: device.into(),
                card: self.card.clone(),
            });
        }
        Ok(())
    }
}

/// An open, streaming V4L2 camera (see the module doc).
pub struct Device {
    device: String,
    fd: OwnedFd,
    caps: Caps,
    mode: Mode,
    maps: Vec<Mapped>,
    /// The buffer handed out by the last `next`, queued again at the next.
    held: Option<u32>,
    stop: Arc<AtomicBool>,
    stall: Duration,
    last: Instant,
}

impl Device {
    /// Opens `path` and starts streaming MJPG in the mode `opts.want` selects.
    pub fn open(
        path: &Path,
        opts: &DeviceOptions,
        stop: Arc<AtomicBool>,
    ) -> Result<Device, DeviceError> {
        let device = path.display().to_string();
        let fd = open_nonblocking(path).map_err(|error| DeviceError::Open {
            device: device.clone(),
            error,
        })?;
        let ioctl_err = |call: &'static str| {
            let device = device.clone();
            move |error| DeviceError::Ioctl {
                device,
                call,
                error,
            }
        };
        let mut cap: sys::v4l2_capability = zeroed();
        // SAFETY: QUERYCAP takes a v4l2_capability.
        unsafe { ioctl(fd.as_fd(), sys::VIDIOC_QUERYCAP, &mut cap) }.map_err(|error| {
            DeviceError::NotV4l2 {
                device: device.clone(),
                error,
            }
        })?;
        let caps = Caps::from_sys(&cap);
        caps.check(&device)?;
        let formats = formats(&fd).map_err(ioctl_err("VIDIOC_ENUM_FMT"))?;
        let Some(&pixfmt) = formats
            .iter()
            .find(|&&f| f == sys::V4L2_PIX_FMT_MJPEG || f == sys::V4L2_PIX_FMT_JPEG)
        else {
            return Err(DeviceError::NoMjpeg {
                device,
                card: caps.card,
                offered: formats.iter().map(|&f| sys::fourcc_name(f)).collect(),
            });
        };
        let offered = mjpg_modes(&fd, pixfmt).map_err(ioctl_err("VIDIOC_ENUM_FRAMESIZES"))?;
        let mut mode = modes::select(&offered, opts.want).map_err(|error| DeviceError::Mode {
            device: device.clone(),
            error,
        })?;
        set_format(&fd, &device, pixfmt, &mode)?;
        let mut parm: sys::v4l2_streamparm = zeroed();
        parm.type_ = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE;
        parm.parm.capture = sys::v4l2_captureparm {
            timeperframe: sys::v4l2_fract {
                numerator: mode.interval.numerator,
                denominator: mode.interval.denominator,
            },
            ..zeroed()
        };
        // SAFETY: S_PARM takes a v4l2_streamparm.
        match unsafe { ioctl(fd.as_fd(), sys::VIDIOC_S_PARM, &mut parm) } {
            Ok(()) => {}
            // A driver that cannot set the rate streams at the one it has: refused only when
            // --fps asked for one.
            Err(e)
                if opts.want.fps.is_none()
                    && matches!(e.raw_os_error(), Some(libc::ENOTTY | libc::EINVAL)) =>
            {
                parm = zeroed();
            }
            Err(e) => return Err(ioctl_err("VIDIOC_S_PARM")(e)),
        }
        // SAFETY: the driver filled the capture member (the buffer type is capture).
        let set = unsafe { parm.parm.capture.timeperframe };
        if set.numerator != 0 && set.denominator != 0 {
            mode.interval = Interval {
                numerator: set.numerator,
                denominator: set.denominator,
            };
        }
        let maps = map_buffers(&fd, &device, opts.buffers)?;
        let mut kind = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE as libc::c_int;
        // SAFETY: STREAMON takes an int, the buffer type.
        unsafe { ioctl(fd.as_fd(), sys::VIDIOC_STREAMON, &mut kind) }
            .map_err(ioctl_err("VIDIOC_STREAMON"))?;
        Ok(Device {
            device,
            fd,
            caps,
            mode,
            maps,
            held: None,
            stop,
            stall: opts.stall_timeout,
            last: Instant::now(),
        })
    }

    /// The mode streaming (the frame interval as the driver set it).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn caps(&self) -> &Caps {
        &self.caps
    }

    /// The mmap buffers in the queue.
    pub fn buffers(&self) -> usize {
        self.maps.len()
    }

    fn queue(&self, index: u32) -> Result<(), SourceError> {
        let mut b: sys::v4l2_buffer = zeroed();
        b.type_ = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE;
        b.memory = sys::V4L2_MEMORY_MMAP;
        b.index = index;
        // SAFETY: QBUF takes a v4l2_buffer.
        unsafe { ioctl(self.fd.as_fd(), sys::VIDIOC_QBUF, &mut b) }.map_err(|error| {
            SourceError::Ioctl {
                device: self.device.clone(),
                call: "VIDIOC_QBUF",
                error,
            }
        })
    }

    /// Waits for a buffer to be ready: Ok(false) when told to stop.
    fn wait(&mut self) -> Result<bool, SourceError> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(false);
            }
            let mut p = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut p, 1, POLL.as_millis() as libc::c_int) };
            if r > 0 {
                // Readable, or an error (an unplugged camera): DQBUF says which.
                return Ok(true);
            }
            if r < 0 {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err(SourceError::Ioctl {
                        device: self.device.clone(),
                        call: "poll",
                        error,
                    });
                }
            }
            if self.last.elapsed() >= self.stall {
                return Err(SourceError::Stalled {
                    device: self.device.clone(),
                    waited: self.last.elapsed(),
                });
            }
        }
    }
}

impl FrameSource for Device {
    fn name(&self) -> &str {
        &self.device
    }

    fn origin(&self) -> &'static str {
        "the V4L2 camera's MJPG buffers held them"
    }

    fn next(&mut self) -> Result<Next<'_>, SourceError> {
        if let Some(i) = self.held.take() {
            self.queue(i)?;
        }
        loop {
            if !self.wait()? {
                return Ok(Next::Stopped);
            }
            let mut b: sys::v4l2_buffer = zeroed();
            b.type_ = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE;
            b.memory = sys::V4L2_MEMORY_MMAP;
            // SAFETY: DQBUF takes a v4l2_buffer.
            match unsafe { ioctl(self.fd.as_fd(), sys::VIDIOC_DQBUF, &mut b) } {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) => {
                    return Err(SourceError::Ioctl {
                        device: self.device.clone(),
                        call: "VIDIOC_DQBUF",
                        error,
                    })
                }
            }
            self.last = Instant::now();
            let Some(map) = self.maps.get(b.index as usize) else {
                return Err(SourceError::Ioctl {
                    device: self.device.clone(),
                    call: "VIDIOC_DQBUF",
                    error: io::Error::other(format!("buffer index {} unknown", b.index)),
                });
            };
            self.held = Some(b.index);
            // SAFETY: the mapping is live while `self` is, and dequeued: the driver does not
            // write it until it is queued again (at the next `next`, after this borrow).
            let mem = unsafe { std::slice::from_raw_parts(map.ptr, map.len) };
            let timestamp = Duration::new(
                u64::try_from(b.timestamp.tv_sec).unwrap_or(0),
                u32::try_from(b.timestamp.tv_usec).unwrap_or(0) * 1000,
            );
            return Ok(Next::Buffer(Dequeued {
                mem,
                bytesused: b.bytesused,
                flags: b.flags,
                sequence: b.sequence,
                timestamp,
            }));
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        let mut kind = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE as libc::c_int;
        // SAFETY: STREAMOFF takes an int; an error (not streaming) changes nothing.
        let _ = unsafe { ioctl(self.fd.as_fd(), sys::VIDIOC_STREAMOFF, &mut kind) };
        // The mappings are dropped (unmapped) before the descriptor closes (field order).
        self.maps.clear();
    }
}

fn open_nonblocking(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    // SAFETY: a NUL-terminated path; the flags ask for nothing unusual.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Every pixel format of the capture type, until the driver says EINVAL.
fn formats(fd: &OwnedFd) -> io::Result<Vec<u32>> {
    let mut out = Vec::new();
    for index in 0.. {
        let mut d: sys::v4l2_fmtdesc = zeroed();
        d.index = index;
        d.type_ = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE;
        // SAFETY: ENUM_FMT takes a v4l2_fmtdesc.
        match unsafe { ioctl(fd.as_fd(), sys::VIDIOC_ENUM_FMT, &mut d) } {
            Ok(()) => out.push(d.pixelformat),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Every (size, interval) of `pixfmt`: discrete sizes each with its discrete intervals; a
/// stepwise size range by its largest size, a stepwise interval range by its shortest.
fn mjpg_modes(fd: &OwnedFd, pixfmt: u32) -> io::Result<Vec<Mode>> {
    let mut sizes = Vec::new();
    for index in 0.. {
        let mut s: sys::v4l2_frmsizeenum = zeroed();
        s.index = index;
        s.pixel_format = pixfmt;
        // SAFETY: ENUM_FRAMESIZES takes a v4l2_frmsizeenum.
        match unsafe { ioctl(fd.as_fd(), sys::VIDIOC_ENUM_FRAMESIZES, &mut s) } {
            Ok(()) if s.type_ == sys::V4L2_FRMSIZE_TYPE_DISCRETE => {
                // `discrete` is the union's first two words.
                sizes.push((s.size.min_width, s.size.max_width));
            }
            Ok(()) => {
                sizes.push((s.size.max_width, s.size.max_height));
                break;
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
            Err(e) => return Err(e),
        }
    }
    let mut out = Vec::new();
    for (width, height) in sizes {
        for index in 0.. {
            let mut i: sys::v4l2_frmivalenum = zeroed();
            i.index = index;
            i.pixel_format = pixfmt;
            i.width = width;
            i.height = height;
            // SAFETY: ENUM_FRAMEINTERVALS takes a v4l2_frmivalenum.
            match unsafe { ioctl(fd.as_fd(), sys::VIDIOC_ENUM_FRAMEINTERVALS, &mut i) } {
                Ok(()) => {
                    // `discrete` is the union's first fraction; a range's shortest is `min`.
                    let f = i.interval.min;
                    out.push(Mode {
                        width,
                        height,
                        interval: Interval {
                            numerator: f.numerator,
                            denominator: f.denominator,
                        },
                    });
                    if i.type_ != sys::V4L2_FRMIVAL_TYPE_DISCRETE {
                        break;
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

fn set_format(fd: &OwnedFd, device: &str, pixfmt: u32, mode: &Mode) -> Result<(), DeviceError> {
    let mut f: sys::v4l2_format = zeroed();
    f.type_ = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE;
    f.fmt.pix = sys::v4l2_pix_format {
        width: mode.width,
        height: mode.height,
        pixelformat: pixfmt,
        ..zeroed()
    };
    // SAFETY: S_FMT takes a v4l2_format.
    unsafe { ioctl(fd.as_fd(), sys::VIDIOC_S_FMT, &mut f) }.map_err(|error| {
        DeviceError::Ioctl {
            device: device.into(),
            call: "VIDIOC_S_FMT",
            error,
        }
    })?;
    // SAFETY: the driver filled the pix member (the buffer type is capture).
    let got = unsafe { f.fmt.pix };
    if (got.pixelformat, got.width, got.height) != (pixfmt, mode.width, mode.height) {
        return Err(DeviceError::FormatRefused {
            device: device.into(),
            asked: (mode.width, mode.height),
            got_format: sys::fourcc_name(got.pixelformat),
            got: (got.width, got.height),
        });
    }
    Ok(())
}

/// Requests `count` mmap buffers, maps and queues each.
fn map_buffers(fd: &OwnedFd, device: &str, count: u32) -> Result<Vec<Mapped>, DeviceError> {
    let ioctl_err = |call: &'static str| {
        move |error| DeviceError::Ioctl {
            device: device.into(),
            call,
            error,
        }
    };
    let mut req: sys::v4l2_requestbuffers = zeroed();
    req.count = count;
    req.type_ = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE;
    req.memory = sys::V4L2_MEMORY_MMAP;
    // SAFETY: REQBUFS takes a v4l2_requestbuffers.
    unsafe { ioctl(fd.as_fd(), sys::VIDIOC_REQBUFS, &mut req) }
        .map_err(ioctl_err("VIDIOC_REQBUFS"))?;
    if req.count < 2 {
        return Err(DeviceError::TooFewBuffers {
            device: device.into(),
            got: req.count,
        });
    }
    let mut maps = Vec::new();
    for index in 0..req.count {
        let mut b: sys::v4l2_buffer = zeroed();
        b.type_ = sys::V4L2_BUF_TYPE_VIDEO_CAPTURE;
        b.memory = sys::V4L2_MEMORY_MMAP;
        b.index = index;
        // SAFETY: QUERYBUF takes a v4l2_buffer.
        unsafe { ioctl(fd.as_fd(), sys::VIDIOC_QUERYBUF, &mut b) }
            .map_err(ioctl_err("VIDIOC_QUERYBUF"))?;
        // SAFETY: an mmap buffer's `m` holds its offset.
        let offset = unsafe { b.m.offset };
        // SAFETY: mapping the device's buffer at the offset QUERYBUF gave, its length long.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                b.length as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                libc::off_t::from(offset),
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(DeviceError::Mmap {
                device: device.into(),
                index,
                length: b.length,
                error: io::Error::last_os_error(),
            });
        }
        maps.push(Mapped {
            ptr: ptr.cast(),
            len: b.length as usize,
        });
        // SAFETY: QBUF takes a v4l2_buffer (the one QUERYBUF filled).
        unsafe { ioctl(fd.as_fd(), sys::VIDIOC_QBUF, &mut b) }.map_err(ioctl_err("VIDIOC_QBUF"))?;
    }
    Ok(maps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(c: u32) -> Caps {
        Caps {
            card: "UVC Camera (046d:0825)".into(),
            driver: "uvcvideo".into(),
            caps: c,
        }
    }

    #[test]
    fn capabilities_are_checked_and_a_lack_is_named() {
        let cam = sys::V4L2_CAP_VIDEO_CAPTURE | sys::V4L2_CAP_STREAMING;
        assert!(caps(cam).check("/dev/video0").is_ok());
        // A UVC camera's metadata node (/dev/video1): V4L2_CAP_META_CAPTURE only.
        let e = caps(0x0080_0000 | sys::V4L2_CAP_STREAMING)
            .check("/dev/video1")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/video1 (UVC Camera (046d:0825)): not a video capture device (device \
             capabilities 0x04800000)"
        );
        let e = caps(sys::V4L2_CAP_VIDEO_CAPTURE_MPLANE | sys::V4L2_CAP_STREAMING)
            .check("/dev/video2")
            .unwrap_err();
        assert!(
            e.to_string()
                .ends_with("; multi-planar capture is not supported"),
            "{e}"
        );
        let e = caps(sys::V4L2_CAP_VIDEO_CAPTURE)
            .check("/dev/video0")
            .unwrap_err();
        assert!(matches!(e, DeviceError::NoStreaming { .. }), "{e}");
    }

    #[test]
    fn a_camera_without_mjpg_names_what_it_has() {
        let e = DeviceError::NoMjpeg {
            device: "/dev/video0".into(),
            card: "Integrated Camera".into(),
            offered: [sys::fourcc(*b"YUYV"), sys::fourcc(*b"GREY")]
                .iter()
                .map(|&f| sys::fourcc_name(f))
                .collect(),
        };
        assert_eq!(
            e.to_string(),
            "/dev/video0 (Integrated Camera): no MJPG format (it offers YUYV, GREY)"
        );
    }

    #[test]
    fn device_caps_are_used_when_the_driver_fills_them() {
        let mut c: sys::v4l2_capability = zeroed();
        c.card[..4].copy_from_slice(b"cam0");
        c.capabilities = sys::V4L2_CAP_DEVICE_CAPS
            | sys::V4L2_CAP_VIDEO_CAPTURE
            | sys::V4L2_CAP_STREAMING
            | 0x0080_0000;
        c.device_caps = 0x0080_0000 | sys::V4L2_CAP_STREAMING;
        let got = Caps::from_sys(&c);
        assert_eq!(got.card, "cam0");
        assert_eq!(
            got.caps, c.device_caps,
            "the node's, not the whole device's"
        );
        assert!(matches!(
            got.check("/dev/video1"),
            Err(DeviceError::NotCapture { .. })
        ));
    }

    /// The kernel devices this machine has are not cameras: each is refused by name.
    #[test]
    fn what_is_not_a_v4l2_camera_is_refused_by_name() {
        let stop = Arc::new(AtomicBool::new(false));
        let opts = DeviceOptions::default();
        let e = Device::open(Path::new("/dev/null"), &opts, stop.clone())
            .err()
            .unwrap();
        assert!(matches!(e, DeviceError::NotV4l2 { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("/dev/null: not a V4L2 device (VIDIOC_QUERYCAP: "),
            "{e}"
        );
        let e = Device::open(Path::new("/dev/video-none"), &opts, stop.clone())
            .err()
            .unwrap();
        assert!(
            matches!(&e, DeviceError::Open { error, .. } if error.kind() == io::ErrorKind::NotFound),
            "{e}"
        );
        assert!(
            e.to_string().starts_with("/dev/video-none: opening: "),
            "{e}"
        );
        let dir = std::env::temp_dir();
        let e = Device::open(&dir, &opts, stop).err().unwrap();
        assert!(
            matches!(e, DeviceError::Open { .. } | DeviceError::NotV4l2 { .. }),
            "{e}"
        );
    }
}

//! The kernel's V4L2 interface as far as the camera driver uses it: the structs of
//! `<linux/videodev2.h>` (`#[repr(C)]`, field for field, so their layout follows C's on each
//! target) and the ioctl request numbers, encoded from the structs' sizes as the header's
//! `_IOR`/`_IOWR` macros do (the generic `_IOC` layout of x86, arm, aarch64 and riscv). The
//! sizes and numbers are checked against the header's values for 64-bit Linux in the tests
//! below (values printed by a C program compiled against linux-libc-dev 6.x).
//!
//! Only this file and [`super::device`] touch the kernel; everything else in the module sees
//! plain Rust values.

#![allow(non_camel_case_types)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

pub const V4L2_BUF_TYPE_VIDEO_CAPTURE: u32 = 1;
pub const V4L2_MEMORY_MMAP: u32 = 1;

pub const V4L2_CAP_VIDEO_CAPTURE: u32 = 0x0000_0001;
pub const V4L2_CAP_VIDEO_CAPTURE_MPLANE: u32 = 0x0000_1000;
pub const V4L2_CAP_STREAMING: u32 = 0x0400_0000;
pub const V4L2_CAP_DEVICE_CAPS: u32 = 0x8000_0000;
pub const V4L2_CAP_TIMEPERFRAME: u32 = 0x1000;

pub const V4L2_FRMSIZE_TYPE_DISCRETE: u32 = 1;
pub const V4L2_FRMIVAL_TYPE_DISCRETE: u32 = 1;

pub const V4L2_BUF_FLAG_ERROR: u32 = 0x0000_0040;
pub const V4L2_BUF_FLAG_TIMESTAMP_MASK: u32 = 0x0000_e000;
pub const V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC: u32 = 0x0000_2000;

/// `v4l2_fourcc('M', 'J', 'P', 'G')`: what UVC cameras call their MJPEG.
pub const V4L2_PIX_FMT_MJPEG: u32 = fourcc(*b"MJPG");
/// `v4l2_fourcc('J', 'P', 'E', 'G')`: the same bytes as some other drivers name them.
pub const V4L2_PIX_FMT_JPEG: u32 = fourcc(*b"JPEG");

pub const fn fourcc(c: [u8; 4]) -> u32 {
    u32::from_le_bytes(c)
}

/// A fourcc as its four characters (`MJPG`, `YUYV`).
pub fn fourcc_name(f: u32) -> String {
    f.to_le_bytes()
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect::<String>()
        .trim_end()
        .to_string()
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_capability {
    pub driver: [u8; 16],
    pub card: [u8; 32],
    pub bus_info: [u8; 32],
    pub version: u32,
    pub capabilities: u32,
    pub device_caps: u32,
    pub reserved: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_fmtdesc {
    pub index: u32,
    pub type_: u32,
    pub flags: u32,
    pub description: [u8; 32],
    pub pixelformat: u32,
    pub mbus_code: u32,
    pub reserved: [u32; 3],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_frmsize_stepwise {
    pub min_width: u32,
    pub max_width: u32,
    pub step_width: u32,
    pub min_height: u32,
    pub max_height: u32,
    pub step_height: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_frmsizeenum {
    pub index: u32,
    pub pixel_format: u32,
    pub type_: u32,
    /// `discrete` (width, height) is the first two words; `stepwise` all six.
    pub size: v4l2_frmsize_stepwise,
    pub reserved: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct v4l2_fract {
    pub numerator: u32,
    pub denominator: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_frmival_stepwise {
    pub min: v4l2_fract,
    pub max: v4l2_fract,
    pub step: v4l2_fract,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_frmivalenum {
    pub index: u32,
    pub pixel_format: u32,
    pub width: u32,
    pub height: u32,
    pub type_: u32,
    /// `discrete` is `interval.min`; `stepwise` all three.
    pub interval: v4l2_frmival_stepwise,
    pub reserved: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_pix_format {
    pub width: u32,
    pub height: u32,
    pub pixelformat: u32,
    pub field: u32,
    pub bytesperline: u32,
    pub sizeimage: u32,
    pub colorspace: u32,
    pub priv_: u32,
    pub flags: u32,
    pub ycbcr_enc: u32,
    pub quantization: u32,
    pub xfer_func: u32,
}

/// `v4l2_format.fmt`: 200 bytes, aligned as its `v4l2_window` member's pointers are.
#[repr(C)]
#[derive(Clone, Copy)]
pub union v4l2_format_fmt {
    pub pix: v4l2_pix_format,
    pub raw_data: [u8; 200],
    _align: [*const u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_format {
    pub type_: u32,
    pub fmt: v4l2_format_fmt,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_captureparm {
    pub capability: u32,
    pub capturemode: u32,
    pub timeperframe: v4l2_fract,
    pub extendedmode: u32,
    pub readbuffers: u32,
    pub reserved: [u32; 4],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union v4l2_streamparm_parm {
    pub capture: v4l2_captureparm,
    pub raw_data: [u8; 200],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_streamparm {
    pub type_: u32,
    pub parm: v4l2_streamparm_parm,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_requestbuffers {
    pub count: u32,
    pub type_: u32,
    pub memory: u32,
    pub capabilities: u32,
    pub flags: u8,
    pub reserved: [u8; 3],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_timecode {
    pub type_: u32,
    pub flags: u32,
    pub frames: u8,
    pub seconds: u8,
    pub minutes: u8,
    pub hours: u8,
    pub userbits: [u8; 4],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union v4l2_buffer_m {
    pub offset: u32,
    pub userptr: libc::c_ulong,
    pub planes: *mut libc::c_void,
    pub fd: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct v4l2_buffer {
    pub index: u32,
    pub type_: u32,
    pub bytesused: u32,
    pub flags: u32,
    pub field: u32,
    pub timestamp: libc::timeval,
    pub timecode: v4l2_timecode,
    pub sequence: u32,
    pub memory: u32,
    pub m: v4l2_buffer_m,
    pub length: u32,
    pub reserved2: u32,
    pub request_fd: i32,
}

/// A zeroed value of a plain-data kernel struct (all of the above are valid all-zero).
pub fn zeroed<T: Copy>() -> T {
    // SAFETY: only instantiated with the `#[repr(C)]` structs and unions of this file, whose
    // fields are integers, arrays of integers and raw pointers: all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// `_IOC(dir, 'V', nr, size)`.
const fn ioc(dir: u32, nr: u32, size: usize) -> libc::Ioctl {
    ((dir << 30) | ((size as u32) << 16) | ((b'V' as u32) << 8) | nr) as libc::Ioctl
}

const fn ior<T>(nr: u32) -> libc::Ioctl {
    ioc(IOC_READ, nr, std::mem::size_of::<T>())
}

const fn iow<T>(nr: u32) -> libc::Ioctl {
    ioc(IOC_WRITE, nr, std::mem::size_of::<T>())
}

const fn iowr<T>(nr: u32) -> libc::Ioctl {
    ioc(IOC_READ | IOC_WRITE, nr, std::mem::size_of::<T>())
}

pub const VIDIOC_QUERYCAP: libc::Ioctl = ior::<v4l2_capability>(0);
pub const VIDIOC_ENUM_FMT: libc::Ioctl = iowr::<v4l2_fmtdesc>(2);
pub const VIDIOC_S_FMT: libc::Ioctl = iowr::<v4l2_format>(5);
pub const VIDIOC_REQBUFS: libc::Ioctl = iowr::<v4l2_requestbuffers>(8);
pub const VIDIOC_QUERYBUF: libc::Ioctl = iowr::<v4l2_buffer>(9);
pub const VIDIOC_QBUF: libc::Ioctl = iowr::<v4l2_buffer>(15);
pub const VIDIOC_DQBUF: libc::Ioctl = iowr::<v4l2_buffer>(17);
pub const VIDIOC_STREAMON: libc::Ioctl = iow::<libc::c_int>(18);
pub const VIDIOC_STREAMOFF: libc::Ioctl = iow::<libc::c_int>(19);
pub const VIDIOC_S_PARM: libc::Ioctl = iowr::<v4l2_streamparm>(22);
pub const VIDIOC_ENUM_FRAMESIZES: libc::Ioctl = iowr::<v4l2_frmsizeenum>(74);
pub const VIDIOC_ENUM_FRAMEINTERVALS: libc::Ioctl = iowr::<v4l2_frmivalenum>(75);

/// One ioctl on `fd` with `arg`, retried on EINTR.
///
/// # Safety
/// `request` must be an ioctl whose argument is a `T` (the pairs above).
pub unsafe fn ioctl<T>(fd: BorrowedFd<'_>, request: libc::Ioctl, arg: &mut T) -> io::Result<()> {
    loop {
        // SAFETY: the caller pairs `request` with its argument type; `arg` is a live `T`.
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), request, arg as *mut T) };
        if r != -1 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(all(
    test,
    target_os = "linux",
    target_env = "gnu",
    target_pointer_width = "64"
))]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The values `<linux/videodev2.h>` gives on x86_64 (the same on aarch64).
    #[test]
    fn sizes_and_request_numbers_are_the_headers() {
        assert_eq!(size_of::<v4l2_capability>(), 0x68);
        assert_eq!(size_of::<v4l2_fmtdesc>(), 0x40);
        assert_eq!(size_of::<v4l2_frmsizeenum>(), 0x2c);
        assert_eq!(size_of::<v4l2_frmivalenum>(), 0x34);
        assert_eq!(size_of::<v4l2_format>(), 0xd0);
        assert_eq!(offset_of!(v4l2_format, fmt), 8);
        assert_eq!(size_of::<v4l2_streamparm>(), 0xcc);
        assert_eq!(size_of::<v4l2_requestbuffers>(), 0x14);
        assert_eq!(size_of::<v4l2_buffer>(), 0x58);
        assert_eq!(offset_of!(v4l2_buffer, timestamp), 0x18);
        assert_eq!(offset_of!(v4l2_buffer, timecode), 0x28);
        assert_eq!(offset_of!(v4l2_buffer, sequence), 0x38);
        assert_eq!(offset_of!(v4l2_buffer, memory), 0x3c);
        assert_eq!(offset_of!(v4l2_buffer, m), 0x40);
        assert_eq!(offset_of!(v4l2_buffer, length), 0x48);
        let want: [(libc::Ioctl, libc::Ioctl); 12] = [
            (VIDIOC_QUERYCAP, 0x80685600),
            (VIDIOC_ENUM_FMT, 0xc0405602),
            (VIDIOC_ENUM_FRAMESIZES, 0xc02c564a),
            (VIDIOC_ENUM_FRAMEINTERVALS, 0xc034564b),
            (VIDIOC_S_FMT, 0xc0d05605),
            (VIDIOC_S_PARM, 0xc0cc5616),
            (VIDIOC_REQBUFS, 0xc0145608),
            (VIDIOC_QUERYBUF, 0xc0585609),
            (VIDIOC_QBUF, 0xc058560f),
            (VIDIOC_DQBUF, 0xc0585611),
            (VIDIOC_STREAMON, 0x40045612),
            (VIDIOC_STREAMOFF, 0x40045613),
        ];
        for (i, (got, want)) in want.iter().enumerate() {
            assert_eq!(got, want, "request {i}");
        }
        assert_eq!(V4L2_PIX_FMT_MJPEG, 0x47504a4d);
        assert_eq!(V4L2_PIX_FMT_JPEG, 0x4745504a);
        assert_eq!(fourcc_name(V4L2_PIX_FMT_MJPEG), "MJPG");
        assert_eq!(fourcc_name(fourcc(*b"Y8  ")), "Y8");
    }
}

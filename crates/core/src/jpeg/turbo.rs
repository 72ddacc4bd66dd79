//! libjpeg-turbo's TurboJPEG API, loaded at run time (`dlopen` of `libturbojpeg.so.0`).
//!
//! Loaded, not linked: building needs no libjpeg-turbo, and the same binary (or Python wheel)
//! uses it where the system has it (Debian's `libturbojpeg0`) and zune-jpeg where it does
//! not. Per core its SIMD decoder is 8-43 % faster than zune-jpeg on 1080p frames (see
//! BENCHMARKS.md, "Speed per core"), the same on small ones.
//!
//! Only TurboJPEG 2.x functions are called (`tjInitDecompress`, `tjDecompressHeader3`,
//! `tjDecompress2`, `tjGetErrorStr2`, `tjGetErrorCode`, `tjDestroy`): libjpeg-turbo 2.0-2.1
//! has them, and 3.x keeps them (a compatibility wrapper over its `tj3*` API, same soname).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::sync::OnceLock;

use libloading::Library;

use crate::error::TurboError;

/// The file name the loader looks for (the runtime package's; `libturbojpeg.so` alone comes
/// only with the `-dev` package).
pub const LIBRARY: &str = "libturbojpeg.so.0";

// From turbojpeg.h (2.1.5): enum TJPF, enum TJCS, enum TJERR.
const TJPF_RGB: c_int = 0;
const TJPF_GRAY: c_int = 6;
const TJCS_RGB: c_int = 0;
const TJCS_YCBCR: c_int = 1;
const TJCS_GRAY: c_int = 2;
const TJERR_WARNING: c_int = 0;

type Handle = *mut c_void;

/// The functions we call, copied out of the library, which stays loaded for the process.
pub(crate) struct Turbo {
    init_decompress: unsafe extern "C" fn() -> Handle,
    decompress_header3: unsafe extern "C" fn(
        Handle,
        *const u8,
        c_ulong,
        *mut c_int,
        *mut c_int,
        *mut c_int,
        *mut c_int,
    ) -> c_int,
    #[allow(clippy::type_complexity)]
    decompress2: unsafe extern "C" fn(
        Handle,
        *const u8,
        c_ulong,
        *mut u8,
        c_int,
        c_int,
        c_int,
        c_int,
        c_int,
    ) -> c_int,
    destroy: unsafe extern "C" fn(Handle) -> c_int,
    error_str2: unsafe extern "C" fn(Handle) -> *mut c_char,
    error_code: unsafe extern "C" fn(Handle) -> c_int,
    _lib: Library,
}

impl Turbo {
    fn load() -> Result<Turbo, TurboError> {
        // SAFETY: loading libturbojpeg runs its initialisers, which only set up SIMD
        // detection; the symbols are given the types turbojpeg.h declares for them.
        unsafe {
            let lib = Library::new(LIBRARY).map_err(TurboError::Load)?;
            macro_rules! sym {
                ($name:literal) => {
                    *lib.get(concat!($name, "\0").as_bytes()).map_err(|error| {
                        TurboError::Symbol {
                            library: LIBRARY,
                            error,
                        }
                    })?
                };
            }
            Ok(Turbo {
                init_decompress: sym!("tjInitDecompress"),
                decompress_header3: sym!("tjDecompressHeader3"),
                decompress2: sym!("tjDecompress2"),
                destroy: sym!("tjDestroy"),
                error_str2: sym!("tjGetErrorStr2"),
                error_code: sym!("tjGetErrorCode"),
                _lib: lib,
            })
        }
    }
}

static LOADED: OnceLock<Result<Turbo, TurboError>> = OnceLock::new();

/// libjpeg-turbo, loaded on first use; `Err` says why it could not be.
pub(crate) fn get() -> Result<&'static Turbo, &'static TurboError> {
    LOADED.get_or_init(Turbo::load).as_ref()
}

/// One decompressor per thread, made on the thread's first frame: a handle is not safe to
/// share, and making one per frame would cost more than a small frame's decode.
struct ThreadHandle(Handle);

impl Drop for ThreadHandle {
    fn drop(&mut self) {
        if let Ok(t) = get() {
            // SAFETY: the handle came from tjInitDecompress and is destroyed once.
            unsafe { (t.destroy)(self.0) };
        }
    }
}

thread_local! {
    static HANDLE: RefCell<Option<ThreadHandle>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's decompressor.
fn with_handle<R>(
    t: &Turbo,
    f: impl FnOnce(Handle) -> Result<R, TurboError>,
) -> Result<R, TurboError> {
    HANDLE.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            // SAFETY: no arguments; a null return is checked.
            let h = unsafe { (t.init_decompress)() };
            if h.is_null() {
                return Err(TurboError::Init);
            }
            *slot = Some(ThreadHandle(h));
        }
        f(slot.as_ref().expect("made above").0)
    })
}

/// The library's message for the last error on `h`.
fn refused(t: &Turbo, h: Handle) -> TurboError {
    // SAFETY: tjGetErrorStr2 returns a NUL-terminated string owned by the handle (or a
    // static one), valid until the next call on it; copied at once.
    let p = unsafe { (t.error_str2)(h) };
    if p.is_null() {
        return TurboError::Refused("unknown libjpeg-turbo error".into());
    }
    TurboError::Refused(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// `bytes.len()` as the library's length type.
fn frame_len(bytes: &[u8]) -> Result<c_ulong, TurboError> {
    c_ulong::try_from(bytes.len()).map_err(|_| TurboError::FrameTooLarge { len: bytes.len() })
}

/// What the headers say: size, and whether the frame decodes to gray (1) or RGB (3).
/// `None` for colour spaces we leave to zune-jpeg (CMYK, YCCK), which converts them to RGB.
pub(crate) struct Header {
    pub width: usize,
    pub height: usize,
    pub channels: Option<usize>,
}

/// Reads the headers of `bytes`.
pub(crate) fn header(t: &Turbo, bytes: &[u8]) -> Result<Header, TurboError> {
    let len = frame_len(bytes)?;
    with_handle(t, |h| {
        let (mut w, mut ht, mut sub, mut cs) = (0, 0, 0, 0);
        // SAFETY: `bytes` is valid for `len` bytes and only read; the out-pointers are ours.
        let rc = unsafe {
            (t.decompress_header3)(h, bytes.as_ptr(), len, &mut w, &mut ht, &mut sub, &mut cs)
        };
        if rc != 0 {
            return Err(refused(t, h));
        }
        let channels = match cs {
            TJCS_GRAY => Some(1),
            TJCS_RGB | TJCS_YCBCR => Some(3),
            _ => None,
        };
        Ok(Header {
            width: usize::try_from(w).unwrap_or(0),
            height: usize::try_from(ht).unwrap_or(0),
            channels,
        })
    })
}

/// What a libjpeg warning (corrupt entropy data: bytes left before EOI, data that ends before
/// the last block, a bad Huffman code) means to [`decode_into`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Warnings {
    /// Not an error: libjpeg has decoded what it could, as zune-jpeg does with such a frame
    /// and as OpenCV (upstream roverd's reader) and Pillow return it, so a frame reads the
    /// same whichever decoder a machine has. A frame cut short is refused before this
    /// (`check_complete`). What the readers use.
    Pass,
    /// An error with libjpeg's message: `validate --deep`'s strict check of a frame.
    Fail,
}

/// Decodes `bytes` (whose [`header`] gave `width` x `height` and `channels`) into `out`,
/// exactly `height * width * channels` bytes; `warnings` says what a libjpeg warning means.
pub(crate) fn decode_into(
    t: &Turbo,
    bytes: &[u8],
    width: usize,
    height: usize,
    channels: usize,
    out: &mut [u8],
    warnings: Warnings,
) -> Result<(), TurboError> {
    assert_eq!(
        out.len(),
        width * height * channels,
        "checked by the caller"
    );
    let len = frame_len(bytes)?;
    let (w, ht) = match (c_int::try_from(width), c_int::try_from(height)) {
        (Ok(w), Ok(h)) => (w, h),
        _ => return Err(TurboError::TooLarge { width, height }),
    };
    let format = if channels == 1 { TJPF_GRAY } else { TJPF_RGB };
    with_handle(t, |h| {
        // SAFETY: `out` holds exactly width * height * channels bytes, which is what
        // tjDecompress2 writes for this width, height, pitch 0 (packed rows) and pixel
        // format; the header gave that size, so no scaling happens. `bytes` is only read.
        let rc = unsafe {
            (t.decompress2)(
                h,
                bytes.as_ptr(),
                len,
                out.as_mut_ptr(),
                w,
                0,
                ht,
                format,
                0,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: plain query of the handle's last error.
        if warnings == Warnings::Pass && unsafe { (t.error_code)(h) } == TJERR_WARNING {
            return Ok(());
        }
        Err(refused(t, h))
    })
}

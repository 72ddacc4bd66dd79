//! Why a position mapping cannot be read or does not fit its sensor: its own file, so the
//! export's error can name it without importing the mapping code (which reads traces through
//! `source`, whose errors are the export's).

/// The fields of a mapping, in message order.
pub const FIELDS: [&str; 3] = ["latitude", "longitude", "altitude"];

pub(super) fn problem(sensor: &str, field: &str, problem: LocationProblem) -> LocationError {
    LocationError {
        sensor: sensor.to_owned(),
        field: field.to_owned(),
        problem: Box::new(problem),
    }
}

/// A position mapping (config `foxglove_location`, `roverlog export --location`) that cannot
/// be read, or does not fit its sensor's channels: which sensor, which field (`latitude`,
/// `longitude`, `altitude`, or the unknown key), and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{sensor}.{field}: {problem}")]
pub struct LocationError {
    pub sensor: String,
    pub field: String,
    /// Boxed: the error stays small on the success path.
    pub problem: Box<LocationProblem>,
}

/// What is wrong with one field of a mapping ([`LocationError`]); `element` is the field's
/// text (`pos[0]`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LocationProblem {
    #[error("{json} is not a string")]
    NotAString { json: String },
    #[error("the mapping is {json}, not an object of fields")]
    NotAnObject { json: String },
    #[error("unknown field (the fields: {})", FIELDS.join(", "))]
    UnknownField,
    #[error("{text:?} is not a channel element (`name`, or `name[index]` for element index of the channel)")]
    NotAnElement { text: String },
    #[error("given twice")]
    Twice,
    #[error("missing (latitude and longitude are required, altitude is optional)")]
    Missing,
    #[error("{element:?}: sensor {sensor} has no channel {channel} (its channels: {})", channels.join(", "))]
    NoChannel {
        element: String,
        sensor: String,
        channel: String,
        channels: Vec<String>,
    },
    #[error("{element:?}: channel {channel} is {format}; a position is read from a fixed-size channel (raw, lzma, lzmaf)")]
    NotFixedSize {
        element: String,
        channel: String,
        format: String,
    },
    #[error("{element:?}: channel {channel} holds {dtype} values; a position needs real numbers")]
    NotReal {
        element: String,
        channel: String,
        dtype: &'static str,
    },
    #[error("{element:?}: index {index} is out of range: channel {channel} has {elements} elements (shape {shape:?})")]
    IndexOutOfRange {
        element: String,
        channel: String,
        index: usize,
        elements: usize,
        shape: Vec<usize>,
    },
    #[error("{element:?}: channel {channel} has {elements} elements (shape {shape:?}): name one, as \"{channel}[0]\"")]
    WhichElement {
        element: String,
        channel: String,
        elements: usize,
        shape: Vec<usize>,
    },
}

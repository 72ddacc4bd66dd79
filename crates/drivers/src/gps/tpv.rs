//! gpsd's TPV report (time-position-velocity, gpsd_json(5)) as the gps sensor's values.

use serde_json::Value;

/// One TPV report; a field the report lacks is NaN.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tpv {
    pub latitude: f64,
    pub longitude: f64,
    /// Above mean sea level (`altMSL`, or the older `alt`).
    pub altitude: f64,
    pub speed: f64,
    pub track: f64,
    pub climb: f64,
    /// `time` as epoch seconds.
    pub gps_time: f64,
    pub mode: u8,
}

impl Tpv {
    /// The `f8` channels' values, in [`super::CHANNELS`] order.
    pub fn values(&self) -> [f64; 7] {
        [
            self.latitude,
            self.longitude,
            self.altitude,
            self.speed,
            self.track,
            self.climb,
            self.gps_time,
        ]
    }
}

/// A line from gpsd that is not a readable report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TpvError {
    #[error("not JSON: {line:?}")]
    NotJson { line: String },
    #[error("a TPV report's {field} is {value} (want {want})")]
    BadField {
        field: &'static str,
        value: String,
        want: &'static str,
    },
}

/// A TPV report's values; None for gpsd's other reports (VERSION, DEVICES, WATCH, SKY, ...).
pub fn parse(line: &[u8]) -> Result<Option<Tpv>, TpvError> {
    let v: Value = serde_json::from_slice(line).map_err(|_| TpvError::NotJson {
        line: String::from_utf8_lossy(&line[..line.len().min(120)])
            .trim_end()
            .to_string(),
    })?;
    if v["class"] != "TPV" {
        return Ok(None);
    }
    let num = |field: &'static str| -> Result<f64, TpvError> {
        match &v[field] {
            Value::Null => Ok(f64::NAN),
            Value::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN)),
            other => Err(TpvError::BadField {
                field,
                value: other.to_string(),
                want: "a number",
            }),
        }
    };
    let altitude = match num("altMSL")? {
        a if a.is_nan() => num("alt")?,
        a => a,
    };
    let mode = match &v["mode"] {
        Value::Null => 0,
        Value::Number(n) if n.as_u64().is_some_and(|m| m <= 3) => n.as_u64().unwrap_or(0) as u8,
        other => {
            return Err(TpvError::BadField {
                field: "mode",
                value: other.to_string(),
                want: "0, 1, 2 or 3",
            })
        }
    };
    let gps_time = match &v["time"] {
        Value::Null => f64::NAN,
        Value::String(s) => epoch(s).ok_or_else(|| TpvError::BadField {
            field: "time",
            value: s.clone(),
            want: "ISO 8601 UTC as YYYY-MM-DDTHH:MM:SS[.fff]Z",
        })?,
        other => {
            return Err(TpvError::BadField {
                field: "time",
                value: other.to_string(),
                want: "a string",
            })
        }
    };
    Ok(Some(Tpv {
        latitude: num("lat")?,
        longitude: num("lon")?,
        altitude,
        speed: num("speed")?,
        track: num("track")?,
        climb: num("climb")?,
        gps_time,
        mode,
    }))
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z` as epoch seconds.
pub fn epoch(s: &str) -> Option<f64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.splitn(3, ':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let sec: f64 = t.next()?.parse().ok()?;
    if !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || h > 23
        || min > 59
        || !(0.0..61.0).contains(&sec)
    {
        return None;
    }
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + min * 60) as f64 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tpv_report_and_the_others() {
        let line = br#"{"class":"TPV","device":"/dev/pts/1","mode":3,"time":"2026-11-28T10:00:01.500Z","ept":0.005,"lat":52.5,"lon":13.25,"altHAE":80.0,"altMSL":34.5,"speed":2.5,"track":90.0,"climb":-0.25}"#;
        let t = parse(line).unwrap().unwrap();
        assert_eq!(
            t,
            Tpv {
                latitude: 52.5,
                longitude: 13.25,
                altitude: 34.5,
                speed: 2.5,
                track: 90.0,
                climb: -0.25,
                gps_time: 1_795_860_001.5,
                mode: 3
            }
        );
        let no_fix = parse(br#"{"class":"TPV","mode":1}"#).unwrap().unwrap();
        assert_eq!(no_fix.mode, 1);
        assert!(no_fix.latitude.is_nan() && no_fix.gps_time.is_nan());
        assert_eq!(parse(br#"{"class":"SKY","satellites":[]}"#).unwrap(), None);
        assert!(matches!(parse(b"garbage\n"), Err(TpvError::NotJson { .. })));
        assert!(matches!(
            parse(br#"{"class":"TPV","mode":7}"#),
            Err(TpvError::BadField { field: "mode", .. })
        ));
        assert!(matches!(
            parse(br#"{"class":"TPV","lat":"north"}"#),
            Err(TpvError::BadField { field: "lat", .. })
        ));
    }

    #[test]
    fn iso_times() {
        assert_eq!(epoch("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(epoch("2000-03-01T00:00:00.25Z"), Some(951_868_800.25));
        assert_eq!(epoch("2026-11-28T10:00:01.500Z"), Some(1_795_860_001.5));
        assert_eq!(epoch("2026-13-01T00:00:00Z"), None);
        assert_eq!(epoch("2026-11-28 10:00:00"), None);
    }
}

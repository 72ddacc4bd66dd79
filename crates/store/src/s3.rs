//! An S3-compatible bucket through `object_store`, configured as every S3 tool is: from the
//! `AWS_*` environment variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION` or `AWS_DEFAULT_REGION`, `AWS_SESSION_TOKEN`,
//! `AWS_ALLOW_HTTP`). Plain `http://` is allowed without `AWS_ALLOW_HTTP` only for a loopback
//! endpoint (127.0.0.1, ::1, localhost).
//!
//! Every request carries `x-amz-checksum-sha256` of its body, which the store checks on
//! receipt (a part whose bytes were damaged on the way is refused, not stored); the ETag of
//! each part is the MD5 of what the store kept.

use std::ops::Range;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, Checksum};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjPath;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};

use crate::{ObjectInfo, OpenError, PartTag, StoreError, UploadId};

/// Environment variables naming the endpoint, most specific first.
const ENDPOINT_VARS: [&str; 3] = ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"];

pub struct S3Store {
    s3: AmazonS3,
    bucket: String,
    prefix: String,
    endpoint: String,
    rt: tokio::runtime::Runtime,
}

fn var<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

/// The endpoint the `AWS_*` variables name, if any.
pub fn endpoint_from(env: &[(String, String)]) -> Option<String> {
    ENDPOINT_VARS
        .iter()
        .find_map(|v| var(env, v).map(str::to_string))
}

fn is_loopback(endpoint: &str) -> bool {
    let Some(rest) = endpoint.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split('/').next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

impl S3Store {
    /// `rest`: `bucket` or `bucket/prefix` (after `s3://`); `env`: the `AWS_*` variables
    /// (the process's environment, or a test's).
    pub fn open(rest: &str, env: &[(String, String)]) -> Result<S3Store, OpenError> {
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(OpenError::BadUrl {
                dest: format!("s3://{rest}"),
            });
        }
        let endpoint = endpoint_from(env);
        let allow_http = var(env, "AWS_ALLOW_HTTP") == Some("true")
            || endpoint.as_deref().is_some_and(is_loopback);
        // Bounded: an endpoint that does not answer is an error within seconds, not minutes.
        let client = ClientOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(300))
            .with_allow_http(allow_http);
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 4,
            retry_timeout: Duration::from_secs(30),
        };
        // As `AmazonS3Builder::from_env`, from `env`.
        let mut b = AmazonS3Builder::new();
        for (k, v) in env {
            if let Some(key) = k
                .strip_prefix("AWS_")
                .and_then(|_| k.to_ascii_lowercase().parse().ok())
            {
                b = b.with_config(key, v);
            }
        }
        let s3 = b
            .with_client_options(client)
            .with_bucket_name(bucket)
            .with_checksum_algorithm(Checksum::SHA256)
            .with_retry(retry)
            .build()
            .map_err(|e| OpenError::S3Config {
                bucket: bucket.to_string(),
                error: Box::new(e),
            })?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(OpenError::Runtime)?;
        Ok(S3Store {
            s3,
            bucket: bucket.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
            endpoint: endpoint.unwrap_or_else(|| "AWS's default endpoint".into()),
            rt,
        })
    }

    pub fn describe(&self) -> String {
        format!("{} at {}", self.url(), self.endpoint)
    }

    /// `s3://bucket[/prefix]`.
    pub fn url(&self) -> String {
        let p = if self.prefix.is_empty() {
            String::new()
        } else {
            format!("/{}", self.prefix)
        };
        format!("s3://{}{p}", self.bucket)
    }

    fn path(&self, key: &str) -> ObjPath {
        if self.prefix.is_empty() {
            ObjPath::from(key)
        } else {
            ObjPath::from(format!("{}/{key}", self.prefix))
        }
    }

    /// Classifies an `object_store` error: the store's own words for a bucket that is not
    /// there or credentials it refuses, and no answer at all, are errors of their own.
    fn error(&self, op: &'static str, key: &str, e: object_store::Error) -> StoreError {
        // Its own words, and the root cause when they do not already say it (each level of
        // the chain repeats the one below, so the middle adds nothing).
        let mut text = e.to_string();
        let mut root = std::error::Error::source(&e);
        while let Some(next) = root.and_then(|s| s.source()) {
            root = Some(next);
        }
        if let Some(root) = root.map(|r| r.to_string()) {
            if !text.contains(&root) {
                text.push_str(": ");
                text.push_str(&root);
            }
        }
        let answered = text.contains("status code") || text.contains("error response");
        let full = [
            "quota is reached",
            "<Code>QuotaExceeded",
            "<Code>XMinioStorageFull",
            "<Code>InsufficientStorage",
        ]
        .iter()
        .any(|c| text.contains(c));
        match &e {
            // Garage: "Bucket size quota is reached" (a 403); AWS and others: QuotaExceeded,
            // or no room left on the store itself.
            _ if full => StoreError::Full {
                bucket: self.bucket.clone(),
                endpoint: self.endpoint.clone(),
                detail: text,
            },
            object_store::Error::Unauthenticated { .. }
            | object_store::Error::PermissionDenied { .. } => StoreError::Refused {
                bucket: self.bucket.clone(),
                endpoint: self.endpoint.clone(),
                detail: text,
            },
            _ if text.contains("NoSuchBucket") => StoreError::NoSuchBucket {
                bucket: self.bucket.clone(),
                endpoint: self.endpoint.clone(),
            },
            _ if [
                "InvalidAccessKeyId",
                "SignatureDoesNotMatch",
                "AccessDenied",
            ]
            .iter()
            .any(|c| text.contains(c)) =>
            {
                StoreError::Refused {
                    bucket: self.bucket.clone(),
                    endpoint: self.endpoint.clone(),
                    detail: text,
                }
            }
            object_store::Error::Generic { .. } if !answered => StoreError::Unreachable {
                bucket: self.bucket.clone(),
                endpoint: self.endpoint.clone(),
                detail: text,
            },
            _ => StoreError::Request {
                store: self.describe(),
                op,
                key: key.to_string(),
                error: Box::new(e),
            },
        }
    }

    pub fn check(&self) -> Result<(), StoreError> {
        let prefix = (!self.prefix.is_empty()).then(|| ObjPath::from(self.prefix.as_str()));
        match self
            .rt
            .block_on(self.s3.list_with_delimiter(prefix.as_ref()))
        {
            Ok(_) => Ok(()),
            Err(object_store::Error::NotFound { .. }) => Err(StoreError::NoSuchBucket {
                bucket: self.bucket.clone(),
                endpoint: self.endpoint.clone(),
            }),
            Err(e) => Err(self.error("list", &self.prefix, e)),
        }
    }

    pub fn put(&self, key: &str, data: Vec<u8>) -> Result<ObjectInfo, StoreError> {
        let size = data.len() as u64;
        let r = self
            .rt
            .block_on(self.s3.put(&self.path(key), PutPayload::from(data)))
            .map_err(|e| self.error("put", key, e))?;
        Ok(ObjectInfo {
            size,
            etag: r.e_tag.map(|t| t.trim_matches('"').to_string()),
        })
    }

    pub fn create_upload(&self, key: &str) -> Result<UploadId, StoreError> {
        self.rt
            .block_on(self.s3.create_multipart(&self.path(key)))
            .map(UploadId)
            .map_err(|e| self.error("create upload", key, e))
    }

    pub fn put_part(
        &self,
        key: &str,
        upload: &UploadId,
        index: usize,
        data: Vec<u8>,
    ) -> Result<PartTag, StoreError> {
        let part = self
            .rt
            .block_on(
                self.s3
                    .put_part(&self.path(key), &upload.0, index, PutPayload::from(data)),
            )
            .map_err(|e| match e {
                object_store::Error::NotFound { .. } => StoreError::NoSuchUpload {
                    store: self.describe(),
                    key: key.to_string(),
                    upload: upload.0.clone(),
                },
                e => self.error("put part", key, e),
            })?;
        Ok(PartTag {
            etag: etag_of(&part.content_id),
            token: part.content_id,
        })
    }

    pub fn complete_upload(
        &self,
        key: &str,
        upload: &UploadId,
        parts: &[PartTag],
    ) -> Result<ObjectInfo, StoreError> {
        let ids = parts
            .iter()
            .map(|p| PartId {
                content_id: p.token.clone(),
            })
            .collect();
        let r = self
            .rt
            .block_on(self.s3.complete_multipart(&self.path(key), &upload.0, ids))
            .map_err(|e| match e {
                object_store::Error::NotFound { .. } => StoreError::NoSuchUpload {
                    store: self.describe(),
                    key: key.to_string(),
                    upload: upload.0.clone(),
                },
                e => self.error("complete upload", key, e),
            })?;
        let head = self.head(key)?;
        Ok(ObjectInfo {
            size: head.map_or(0, |h| h.size),
            etag: r.e_tag.map(|t| t.trim_matches('"').to_string()),
        })
    }

    pub fn abort_upload(&self, key: &str, upload: &UploadId) -> Result<(), StoreError> {
        self.rt
            .block_on(self.s3.abort_multipart(&self.path(key), &upload.0))
            .map_err(|e| match e {
                object_store::Error::NotFound { .. } => StoreError::NoSuchUpload {
                    store: self.describe(),
                    key: key.to_string(),
                    upload: upload.0.clone(),
                },
                e => self.error("abort upload", key, e),
            })
    }

    pub fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        match self.rt.block_on(self.s3.head(&self.path(key))) {
            Ok(m) => Ok(Some(ObjectInfo {
                size: m.size,
                etag: m.e_tag.map(|t| t.trim_matches('"').to_string()),
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error("head", key, e)),
        }
    }

    /// Every object below the prefix: key (relative to the prefix) and size, sorted.
    pub fn list(&self) -> Result<Vec<(String, u64)>, StoreError> {
        use futures::TryStreamExt;
        let prefix = (!self.prefix.is_empty()).then(|| ObjPath::from(self.prefix.as_str()));
        let listed: Vec<object_store::ObjectMeta> = match self
            .rt
            .block_on(self.s3.list(prefix.as_ref()).try_collect())
        {
            Ok(l) => l,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(StoreError::NoSuchBucket {
                    bucket: self.bucket.clone(),
                    endpoint: self.endpoint.clone(),
                })
            }
            Err(e) => return Err(self.error("list", &self.prefix, e)),
        };
        let cut = if self.prefix.is_empty() {
            0
        } else {
            self.prefix.len() + 1
        };
        let mut out: Vec<(String, u64)> = listed
            .into_iter()
            .map(|m| {
                (
                    m.location.as_ref().get(cut..).unwrap_or("").to_string(),
                    m.size,
                )
            })
            .filter(|(k, _)| !k.is_empty())
            .collect();
        out.sort();
        Ok(out)
    }

    pub fn get_range(&self, key: &str, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        self.rt
            .block_on(self.s3.get_range(&self.path(key), range))
            .map(|b| b.to_vec())
            .map_err(|e| self.error("get", key, e))
    }
}

/// The ETag inside a part's `content_id`: the ETag itself, or (with a checksum algorithm
/// set) `<PartMetadata><e_tag>..</e_tag>...` as `object_store` writes it.
fn etag_of(content_id: &str) -> String {
    let tag = ["e_tag", "ETag"]
        .iter()
        .find_map(|t| {
            let rest = content_id.split_once(&format!("<{t}>"))?.1;
            rest.split(&format!("</{t}>")).next()
        })
        .unwrap_or(content_id);
    tag.replace("&quot;", "").trim_matches('"').to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_endpoints_are_recognised() {
        for e in [
            "http://127.0.0.1:3900",
            "http://localhost:9000/",
            "http://[::1]:80",
        ] {
            assert!(super::is_loopback(e), "{e}");
        }
        for e in [
            "https://127.0.0.1:3900",
            "http://10.0.0.1:3900",
            "http://s3.example",
        ] {
            assert!(!super::is_loopback(e), "{e}");
        }
    }

    #[test]
    fn etag_of_part_metadata() {
        assert_eq!(super::etag_of("\"abc\""), "abc");
        assert_eq!(
            super::etag_of("<PartMetadata><e_tag>&quot;abc&quot;</e_tag><checksum_sha256>x</checksum_sha256></PartMetadata>"),
            "abc"
        );
    }
}

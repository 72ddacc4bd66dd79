//! The dashboard: an HTTP listener on the daemon's own tokio runtime (config `http_listen`,
//! off by default) serving one embedded page and a JSON API beside the control socket.
//!
//! ```text
//! GET  /               the page; /app.js and /style.css beside it (embedded: vehicles are offline)
//! GET  /api/status     exactly the control protocol's `status` reply
//! GET  /api/history    the last minutes, one point a second: rates, bytes/s, disk time left
//! POST /api/command    a control command ({"cmd": "stop"}); the reply is exactly the control
//!                      socket's, with status 200 when it says "ok": true and 422 when not
//! ```
//!
//! The reads answer with the header [`ROLE_HEADER`]: `operator` when the request carries the
//! right token (its commands will be taken), `viewer` when not, so the page shows the
//! operators' buttons only to operators and says when a token is wrong.
//!
//! Security (docs/dashboard.md): the listen address must be loopback unless `http_token` is
//! set (`config::Http` checks both); every command needs `Authorization: Bearer <http_token>`
//! and is a POST with a JSON body (a cross-site form cannot send either); without a token the dashboard is read-only. On a
//! loopback address the `Host` header must name loopback (a DNS-rebinding page cannot reach
//! the API); on any other address the API's reads need the token too. Tokens are compared in
//! constant time (as BLAKE3 digests). Nothing but the embedded assets is served, request heads
//! and bodies are bounded in size and time ([`BODY_TIMEOUT`]), connections are counted and
//! live at most [`MAX_CONNECTION_LIFE`], and idle ones give their slots to new ones (`slots`).

pub mod disk_use;
pub mod history;
mod slots;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde_json::Value;

use crate::command::{refused, reply, Command};
use crate::config;
use crate::recording::{HttpStatus, Recorder};
use crate::shutdown::Shutdown;
use history::History;
use slots::{Admission, Conn, Slots};

/// Connections served at once. When all are taken, a new one takes the slot of the one idle
/// longest (`slots`); only when all are mid-request is it answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 32;
/// Largest command body; a `Content-Length` over it is refused (413) before any of it is read.
pub const MAX_BODY_BYTES: usize = 16 << 10;
/// A command's body must arrive within this after its head, or the request is answered 408
/// and the connection closed (a slow body would otherwise hold a slot for the connection's
/// whole life).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request head (hyper's buffer; its minimum is 8 KiB).
const MAX_HEAD_BYTES: usize = 8 << 10;
/// A request head must arrive within this.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection is asked to close after this (the page reconnects), and dropped
/// [`CLOSE_GRACE`] later whatever it is doing, so slow clients cannot keep slots.
pub const MAX_CONNECTION_LIFE: Duration = Duration::from_secs(60);
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// Connections over the limit being answered 503 at once; past this they are closed unanswered.
const MAX_REFUSING: usize = 32;
/// How long a refused connection's request is read and thrown away after the 503, so closing
/// with it unread does not reset the connection before the client has read the reply.
const REFUSE_LINGER: Duration = Duration::from_millis(500);

/// The response header of the reads saying what the request's token allows.
pub const ROLE_HEADER: &str = "x-roverlog-role";

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

/// Binds the dashboard's listener when `http_listen` is set (at bind time, so a taken port
/// stops the daemon before it reports ready). The address was checked with the config.
pub fn bind(cfg: &config::Http) -> crate::error::Result<Option<std::net::TcpListener>> {
    use crate::error::{Error, ListenProblem};
    let Some(addr) = cfg.listen else {
        return Ok(None);
    };
    let listen = |problem| Error::Listen {
        key: "http_listen",
        addr,
        problem,
    };
    let l =
        std::net::TcpListener::bind(addr).map_err(|e| listen(ListenProblem::Bind(Box::new(e))))?;
    l.set_nonblocking(true)
        .map_err(|e| listen(ListenProblem::Setup(e)))?;
    Ok(Some(l))
}

/// What every request handler sees.
struct Dashboard {
    rec: Arc<Recorder>,
    history: Arc<History>,
    /// The BLAKE3 digest of `http_token` (its `==` is constant-time).
    token: Option<blake3::Hash>,
    /// Listening on loopback: reads need no token, `Host` must name loopback.
    loopback: bool,
}

/// Serves the dashboard on `listener` until shutdown; also keeps its history.
pub async fn serve(listener: std::net::TcpListener, rec: Arc<Recorder>, mut shutdown: Shutdown) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        tracing::error!("dashboard: cannot register the listener with the runtime");
        return;
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::error!("dashboard: no local address: {e}");
            return;
        }
    };
    let dash = Arc::new(Dashboard {
        history: Arc::new(History::default()),
        token: rec
            .cfg
            .http
            .token
            .as_deref()
            .map(|t| blake3::hash(t.as_bytes())),
        loopback: addr.ip().is_loopback(),
        rec,
    });
    let url = format!("http://{addr}/");
    dash.rec.set_http_status(HttpStatus {
        url: url.clone(),
        read_only: dash.token.is_none(),
    });
    tracing::info!(%url, read_only = dash.token.is_none(), "dashboard listening");
    crate::netns::warn_if_isolated("dashboard", addr);
    tokio::spawn(history::run(
        dash.rec.clone(),
        dash.history.clone(),
        shutdown.clone(),
    ));

    let app = router(dash);
    let slots = Slots::new(MAX_CONNECTIONS);
    let refusing = Arc::new(tokio::sync::Semaphore::new(MAX_REFUSING));
    let busy: Arc<[u8]> = busy_reply().into();
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(_) => {
                    // Out of descriptors and the like: wait rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.recv() => return,
        };
        let slot = match slots.admit() {
            Admission::Free(slot) => slot,
            Admission::Evicted(slot) => {
                tracing::debug!(%peer, "dashboard: every slot taken, the longest idle connection gave up its own");
                slot
            }
            Admission::Full => {
                if let Ok(permit) = refusing.clone().try_acquire_owned() {
                    tokio::spawn(refuse(stream, busy.clone(), permit));
                }
                continue;
            }
        };
        let svc =
            TowerToHyperService::new(app.clone().layer(axum::Extension(Peer(peer, slot.conn()))));
        let mut shutdown = shutdown.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .max_headers(64);
            let conn = http.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            let life = tokio::time::sleep(MAX_CONNECTION_LIFE);
            tokio::pin!(life);
            let lived = tokio::time::timeout(MAX_CONNECTION_LIFE + CLOSE_GRACE, async {
                let mut closing = false;
                loop {
                    tokio::select! {
                        _ = conn.as_mut() => return,
                        // Idle (no request in progress, none can start): dropped at once.
                        _ = slot.evicted() => return,
                        _ = &mut life, if !closing => {
                            conn.as_mut().graceful_shutdown();
                            closing = true;
                        }
                        _ = shutdown.recv(), if !closing => {
                            conn.as_mut().graceful_shutdown();
                            closing = true;
                        }
                    }
                }
            })
            .await;
            if lived.is_err() {
                tracing::debug!(%peer, "dashboard: connection dropped after its grace period");
            }
            drop(slot);
        });
    }
}

/// What a request knows of its connection: the peer, and its slot's state.
#[derive(Clone)]
struct Peer(SocketAddr, Arc<Conn>);

/// The body of the answer to a connection over [`MAX_CONNECTIONS`].
const BUSY_BODY: &str =
    r#"{"ok":false,"error":"too many dashboard connections, try again shortly"}"#;

/// The whole answer to a connection over [`MAX_CONNECTIONS`], its length taken from the body.
fn busy_reply() -> Vec<u8> {
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{BUSY_BODY}",
        BUSY_BODY.len()
    )
    .into_bytes()
}

/// Answers a connection over the limit with `reply` (the 503), then reads what the client sent
/// for at most [`REFUSE_LINGER`] before closing, so the reply is not lost to a reset.
async fn refuse(
    mut stream: tokio::net::TcpStream,
    reply: Arc<[u8]>,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = tokio::time::timeout(REFUSE_LINGER, async {
        stream.write_all(&reply).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}

fn router(dash: Arc<Dashboard>) -> Router {
    Router::new()
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/app.js", get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }))
        .route("/style.css", get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }))
        .route("/api/status", get(api_status))
        .route("/api/history", get(api_history))
        .route("/api/command", post(api_command))
        .method_not_allowed_fallback(|| async {
            error(StatusCode::METHOD_NOT_ALLOWED, "wrong method: pages and reads are GET, commands are POST /api/command")
        })
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such page (the dashboard serves /, /api/status, /api/history and POST /api/command)") })
        .layer(middleware::from_fn_with_state(dash.clone(), guard))
        .with_state(dash)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// `res`, closing its connection after it: the rest of the request's body is not read.
fn closing(mut res: Response) -> Response {
    res.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

/// A JSON error reply in the control protocol's shape.
fn error(status: StatusCode, why: impl Into<String>) -> Response {
    (status, axum::Json(refused(why.into()))).into_response()
}

/// Every request: the `Host` check on loopback, then the headers that keep the page from
/// being framed, sniffed or cached.
async fn guard(State(dash): State<Arc<Dashboard>>, req: Request, next: Next) -> Response {
    // In progress: this connection keeps its slot until the reply is made.
    let _busy = match req.extensions().get::<Peer>() {
        Some(Peer(_, conn)) => match conn.begin() {
            Some(busy) => Some(busy),
            None => {
                return closing(error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "this connection gave its slot to a newer one: send the request again",
                ));
            }
        },
        None => None,
    };
    if dash.loopback && !host_allowed(req.headers(), &dash.rec.cfg.http.allowed_hosts) {
        let host = req
            .headers()
            .get(header::HOST)
            .map_or("(none)".into(), |h| {
                String::from_utf8_lossy(h.as_bytes()).into_owned()
            });
        return error(
            StatusCode::MISDIRECTED_REQUEST,
            format!("Host {host:?} is not this loopback dashboard (127.0.0.1, localhost, [::1] or a name in http_allowed_hosts)"),
        );
    }
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'self'; frame-ancestors 'none'; form-action 'none'"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// Whether `Host` names a loopback address (`localhost`, `127.x.x.x`, `[::1]`), with any
/// port or none. The name is what stops a DNS-rebinding page (its requests carry its own
/// name). The port is not checked: a browser leaves out the default port (`Host: 127.0.0.1`
/// for `http_listen` `127.0.0.1:80`), and a port forward, the usual way to reach a vehicle
/// (`ssh -L 9000:127.0.0.1:8080`), brings `Host: localhost:9000`.
fn host_is_loopback(host: &str) -> bool {
    let Some((name, _port)) = config::split_host(host) else {
        return false;
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether a loopback dashboard answers a request with these headers: its `Host` names
/// loopback or one of `http_allowed_hosts` (a name the operator chose to forward to it).
fn host_allowed(headers: &HeaderMap, allowed: &[config::AllowedHost]) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    host_is_loopback(host) || allowed.iter().any(|a| a.matches(host))
}

/// The token of an `Authorization` header of the `Bearer` scheme, whose name is
/// case-insensitive (RFC 9110, 11.1): `bearer x` is as good as `Bearer x`.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim_start())
}

/// Why a request may not proceed, as its answer (`None`: it may): commands always need the
/// token, reads only off loopback.
fn refusal(dash: &Dashboard, headers: &HeaderMap, command: bool) -> Option<Response> {
    if !command && dash.loopback {
        return None;
    }
    let Some(expected) = dash.token else {
        return Some(error(
            StatusCode::FORBIDDEN,
            "this dashboard is read-only: set http_token in the daemon's config to start, stop, rotate or mark from it",
        ));
    };
    match bearer_token(headers) {
        None => Some(error(
            StatusCode::UNAUTHORIZED,
            "missing token: send Authorization: Bearer <http_token>",
        )),
        Some(t) if blake3::hash(t.as_bytes()) == expected => None,
        Some(_) => Some(error(StatusCode::FORBIDDEN, "wrong token")),
    }
}

/// What `headers` allow: `operator` when they carry the right token (a command would be
/// taken), `viewer` otherwise.
fn role(dash: &Dashboard, headers: &HeaderMap) -> &'static str {
    if dash.token.is_some() && refusal(dash, headers, true).is_none() {
        "operator"
    } else {
        "viewer"
    }
}

/// A read's answer, with its [`ROLE_HEADER`].
fn read_reply(dash: &Dashboard, headers: &HeaderMap, body: Value) -> Response {
    let mut res = axum::Json(body).into_response();
    res.headers_mut()
        .insert(ROLE_HEADER, HeaderValue::from_static(role(dash, headers)));
    res
}

async fn api_status(State(dash): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    if let Some(r) = refusal(&dash, &headers, false) {
        return r;
    }
    read_reply(&dash, &headers, reply(Ok(dash.rec.status())))
}

async fn api_history(State(dash): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    if let Some(r) = refusal(&dash, &headers, false) {
        return r;
    }
    read_reply(&dash, &headers, dash.history.to_json())
}

async fn api_command(
    State(dash): State<Arc<Dashboard>>,
    axum::Extension(Peer(peer, _)): axum::Extension<Peer>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(r) = refusal(&dash, &headers, true) {
        return r;
    }
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if !json_body {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a command is a JSON body: send Content-Type: application/json",
        );
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return closing(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "command body of {} bytes is over the limit of {MAX_BODY_BYTES}",
                declared.unwrap_or(0)
            ),
        ));
    }
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY_BYTES))
        .await
    {
        Ok(Ok(b)) => b,
        Ok(Err(_)) => {
            return closing(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("command body over {MAX_BODY_BYTES} bytes (or not received whole)"),
            ))
        }
        Err(_) => {
            return closing(error(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "command body not received within {} s",
                    BODY_TIMEOUT.as_secs()
                ),
            ))
        }
    };
    let v: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("not valid JSON: {e}")),
    };
    let name = v.get("cmd").cloned().unwrap_or_default();
    tracing::info!(%peer, cmd = %name, "dashboard command");
    let reply = match Command::parse(&v) {
        Ok(cmd) => crate::control::execute(&dash.rec, cmd).await,
        Err(e) => refused(e),
    };
    let status = if reply["ok"] == true {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    (status, axum::Json(reply)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_check() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::HOST, HeaderValue::from_str(v).unwrap());
            m
        };
        let host_is_loopback = |m: &HeaderMap| host_allowed(m, &[]);
        for ok in [
            "127.0.0.1:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
            "127.1.2.3:8080",
            // The default port left out (http_listen 127.0.0.1:80), and a port forward.
            "127.0.0.1",
            "localhost",
            "[::1]",
            "localhost:9000",
        ] {
            assert!(host_is_loopback(&h(ok)), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "evil.example",
            "[::2]:80",
            "[::1",
            "10.0.0.1:8080",
        ] {
            assert!(!host_is_loopback(&h(bad)), "{bad}");
        }
        assert!(!host_is_loopback(&HeaderMap::new()));
        let allowed = [config::AllowedHost::parse("rover.local:9000").unwrap()];
        assert!(host_allowed(&h("rover.local:9000"), &allowed));
        assert!(host_allowed(&h("localhost:9000"), &allowed));
        assert!(!host_allowed(&h("rover.local:8080"), &allowed));
        assert!(!host_allowed(&h("evil.example:9000"), &allowed));
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
            m
        };
        for v in [
            "Bearer abc",
            "bearer abc",
            "BEARER abc",
            "Bearer  abc",
            " bearer abc ",
        ] {
            assert_eq!(bearer_token(&h(v)), Some("abc"), "{v:?}");
        }
        for v in ["Basic abc", "Bearerabc", "abc"] {
            assert_eq!(bearer_token(&h(v)), None, "{v:?}");
        }
    }
}

//! Errors in each provider's own shape, so clients show them as they show
//! the provider's.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::limits::Body;

/// Whose error shape a route answers in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Shape {
    /// `{"error": {"message", "type", "param", "code"}}`.
    OpenAi,
    /// `{"type": "error", "error": {"type", "message"}}`.
    Anthropic,
    /// `{"error": "…"}`.
    Ollama,
    /// `{"error": {"code", "message", "status"}}` (Google's API errors).
    Gemini,
}

/// An error answer: `status`, in `shape`, saying `message`.
pub(crate) fn error(shape: Shape, status: StatusCode, message: &str) -> Response<Body> {
    let message = format!("ctxclean: {message}");
    let value = match shape {
        Shape::OpenAi => json!({"error": {
            "message": message,
            "type": openai_type(status),
            "param": null,
            "code": null,
        }}),
        Shape::Anthropic => json!({"type": "error", "error": {
            "type": anthropic_type(status),
            "message": message,
        }}),
        Shape::Ollama => json!({"error": message}),
        Shape::Gemini => json!({"error": {
            "code": status.as_u16(),
            "message": message,
            "status": gemini_status(status),
        }}),
    };
    let body = Full::new(Bytes::from(value.to_string()))
        .map_err(|never| match never {})
        .boxed();
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn gemini_status(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => "INVALID_ARGUMENT",
        StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => "DEADLINE_EXCEEDED",
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::BAD_GATEWAY => "UNAVAILABLE",
        _ => "INTERNAL",
    }
}

fn openai_type(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE => "invalid_request_error",
        StatusCode::GATEWAY_TIMEOUT => "timeout",
        _ => "api_error",
    }
}

fn anthropic_type(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "invalid_request_error",
        StatusCode::PAYLOAD_TOO_LARGE => "request_too_large",
        StatusCode::GATEWAY_TIMEOUT => "timeout_error",
        _ => "api_error",
    }
}

/// What is wrong with a body the route cannot read: where and what.
pub(crate) fn input_error(e: &ctxclean::engine::CleanError) -> String {
    match e {
        ctxclean::engine::CleanError::Input(i) => {
            let col = i.column.map_or(String::new(), |c| format!(", column {c}"));
            format!("the request body, line {}{col}: {}", i.line, i.message)
        }
        other => format!("the request body: {other}"),
    }
}

//! AWS Bedrock's faults: a refused call's `{"message"}` with its exception named in
//! `x-amzn-errortype` (429 `ThrottlingException`, 503 `ServiceUnavailableException`, …; botocore
//! raises the class it names), and the exception message a Converse event stream ends with
//! (`modelStreamErrorException`). Bedrock sends no `retry-after`: botocore's own retry policy
//! decides the wait.

use super::{error_body, exception_for_status};
use crate::fault::{InStreamError, StatusError};

/// Bedrock's answer to a refused call ([`crate::Wire::status_error`]); `retry_after` has no
/// form at this wire.
pub fn status_error(status: u16, retry_after: Option<u32>) -> StatusError {
    let _ = retry_after;
    let exception = match status {
        529 => "ServiceUnavailableException",
        other => exception_for_status(other),
    };
    let message = match exception {
        "ThrottlingException" => {
            "Too many requests, please wait before trying again. (replayed by keyless)"
        }
        "ServiceUnavailableException" => "Service unavailable (replayed by keyless)",
        _ => "The server encountered an internal error (replayed by keyless)",
    };
    StatusError {
        status,
        headers: vec![
            ("x-amzn-errortype", exception.to_owned()),
            ("x-amzn-requestid", "keyless-fault".to_owned()),
        ],
        body: error_body(message),
    }
}

/// The exception message a Converse stream ends with when the model fails mid-answer.
pub fn stream_error() -> InStreamError {
    InStreamError::Exception {
        exception_type: "modelStreamErrorException",
        message: "The model failed mid-stream (replayed by keyless)".to_owned(),
    }
}

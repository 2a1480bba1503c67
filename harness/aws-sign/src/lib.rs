//! AWS credentials as the AWS SDKs read them from the environment ([`AwsCredentials`]), and the
//! SigV4 headers of one request ([`sigv4_headers`]), computed by `aws-sigv4` (no hand-written
//! crypto). The gateway's Bedrock provider and the harness's recording proxy both sign their
//! Bedrock calls here. Neither `Debug` nor any error shows a secret.

use secrecy::{ExposeSecret, SecretString};

/// AWS credentials for SigV4.
#[derive(Clone)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: SecretString,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: SecretString,
    /// `AWS_SESSION_TOKEN`, for temporary credentials.
    pub session_token: Option<SecretString>,
    /// `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`.
    pub region: String,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl AwsCredentials {
    /// The credentials the standard variables hold, read through `var` (`std::env::var` at a
    /// program's edge, a table in tests); `None` without both the key id and the secret.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<AwsCredentials> {
        let present = |name: &str| var(name).filter(|value| !value.is_empty());
        Some(AwsCredentials {
            access_key_id: present("AWS_ACCESS_KEY_ID")?.into(),
            secret_access_key: present("AWS_SECRET_ACCESS_KEY")?.into(),
            session_token: present("AWS_SESSION_TOKEN").map(SecretString::from),
            region: present("AWS_REGION")
                .or_else(|| present("AWS_DEFAULT_REGION"))
                .unwrap_or_else(|| "us-east-1".to_owned()),
        })
    }
}

/// Why a request could not be signed.
#[derive(Debug, thiserror::Error)]
#[error("signing the request with SigV4 failed: {0}")]
pub struct SigningError(String);

/// The headers SigV4 adds to a `POST` of `body` to `url` for `service` (`authorization`,
/// `x-amz-date`, `x-amz-security-token` with temporary credentials), signed over `headers` (the
/// ones the caller sends and wants covered) and the host.
pub fn sigv4_headers(
    credentials: &AwsCredentials,
    service: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(String, String)>, SigningError> {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    let failed = |err: &dyn std::fmt::Display| SigningError(err.to_string());
    let identity = aws_credential_types::Credentials::new(
        credentials.access_key_id.expose_secret(),
        credentials.secret_access_key.expose_secret(),
        credentials
            .session_token
            .as_ref()
            .map(|token| token.expose_secret().to_owned()),
        None,
        "aws-sign",
    )
    .into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(&credentials.region)
        .name(service)
        .time(std::time::SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|err| failed(&err))?
        .into();
    let signable = SignableRequest::new(
        "POST",
        url,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|err| failed(&err))?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|err| failed(&err))?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(token: Option<&str>) -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: token.map(SecretString::from),
            region: "eu-west-1".into(),
        }
    }

    #[test]
    fn the_signature_names_the_key_id_region_and_service_and_carries_the_token() {
        let headers = sigv4_headers(
            &credentials(Some("TOKEN-SECRET")),
            "bedrock",
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/m%3A0/converse",
            &[("content-type", "application/json")],
            b"{}",
        )
        .expect("signs");
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let authorization = header("authorization").unwrap_or_default();
        assert!(
            authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
                && authorization.contains("/eu-west-1/bedrock/aws4_request")
                && authorization.contains("content-type"),
            "{authorization}"
        );
        assert_eq!(header("x-amz-security-token"), Some("TOKEN-SECRET"));
        assert!(header("x-amz-date").is_some());
        let without =
            sigv4_headers(&credentials(None), "bedrock", "https://h/x", &[], b"").expect("signs");
        assert!(!without.iter().any(|(n, _)| n == "x-amz-security-token"));
    }

    #[test]
    fn credentials_come_from_the_standard_variables_and_debug_shows_no_secret() {
        let table = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let read = AwsCredentials::from_vars(table(&[
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "SECRET-KEY"),
            ("AWS_DEFAULT_REGION", "ap-south-1"),
        ]))
        .expect("credentials");
        assert_eq!(read.region, "ap-south-1");
        let shown = format!("{read:?}");
        assert!(
            !shown.contains("SECRET") && !shown.contains("AKID"),
            "{shown}"
        );
        assert!(AwsCredentials::from_vars(table(&[("AWS_ACCESS_KEY_ID", "A")])).is_none());
    }
}

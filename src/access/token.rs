//! Bearer tokens: the SHA-256 of a secret an HTTP client sends as `Authorization: Bearer
//! SECRET`, looked up among the ACL's `token NAME SHA256-HEX` lines. The secret itself is
//! never kept, compared or logged; only its digest is.
//!
//! SHA-256 comes from ring, already in the binary as rustls's provider under the `tls`
//! feature. A build without `tls` has no SHA-256 and refuses `token` lines when it reads the
//! ACL (acl.rs): a hand-written hash, or a crate added only for this, would buy bearer
//! secrets on a server that can only carry them in plaintext.

/// Whether this build can check bearer tokens.
pub const SUPPORTED: bool = cfg!(feature = "tls");

/// The SHA-256 digest of `secret`; `None` in a build without the `tls` feature.
pub fn digest(secret: &[u8]) -> Option<[u8; 32]> {
    #[cfg(feature = "tls")]
    {
        let d = ring::digest::digest(&ring::digest::SHA256, secret);
        let mut out = [0u8; 32];
        out.copy_from_slice(d.as_ref());
        Some(out)
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = secret;
        None
    }
}

#[cfg(all(test, feature = "tls"))]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_sha256() {
        // `printf %s abc | sha256sum`
        let hex: String = digest(b"abc")
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

//! A throwaway certificate authority for the TLS tests, made with rcgen at test time (no key
//! is committed): a CA certificate and the certificates and keys it signs, in a directory
//! removed when it is dropped, and their paths as command-line arguments (`CertFiles`). Used
//! by src/tls/tests.rs too (through `#[path]`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

#[allow(unused_imports)]
pub use rcgen::string::{BmpString, Ia5String, PrintableString, TeletexString, UniversalString};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
pub use rcgen::{DnType, DnValue, SanType};

/// A test CA in its own directory: `issue` writes a certificate and key signed by it.
pub struct TestCa {
    dir: PathBuf,
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let dir = std::env::temp_dir().join(format!("gearwheel-tls-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.join("ca.pem"), issuer.pem()).unwrap();
        TestCa { dir, issuer }
    }

    /// Where its files are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The CA's certificate (PEM), for --ssl-ca-file.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// Writes FILE.pem and FILE.key: a certificate with this CN (none when empty) and SANs.
    pub fn issue(&self, file: &str, cn: &str, sans: &[&str]) -> (PathBuf, PathBuf) {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        if !cn.is_empty() {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        self.issue_params(file, params)
    }

    /// Writes FILE.pem and FILE.key: a certificate with this subject and these SANs, each
    /// of any kind rcgen can write (an IP, email or URI SAN, a CN as a BMPString, two CNs).
    pub fn issue_named(
        &self,
        file: &str,
        subject: &[(DnType, DnValue)],
        sans: Vec<SanType>,
    ) -> (PathBuf, PathBuf) {
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (t, v) in subject {
            params.distinguished_name.push(t.clone(), v.clone());
        }
        params.subject_alt_names = sans;
        self.issue_params(file, params)
    }

    fn issue_params(&self, file: &str, params: CertificateParams) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (cert_path, key_path) = (
            self.dir.join(format!("{file}.pem")),
            self.dir.join(format!("{file}.key")),
        );
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (cert_path, key_path)
    }

    /// The CA's certificate as an argument (`--ssl-ca-file`, `--cacert`).
    pub fn ca_arg(&self) -> String {
        path_arg(&self.ca())
    }

    /// A client's certificate and key with this CN, in the files CN.pem and CN.key.
    pub fn client(&self, cn: &str) -> CertFiles {
        let (cert, key) = self.issue(cn, cn, &[]);
        CertFiles::new(&cert, &key)
    }

    /// A server's certificate and key with this CN, valid for localhost and 127.0.0.1, in the
    /// files CN.pem and CN.key.
    pub fn server(&self, cn: &str) -> CertFiles {
        let (cert, key) = self.issue(cn, cn, &["localhost", "127.0.0.1"]);
        CertFiles::new(&cert, &key)
    }
}

/// A certificate's and its key's paths, as the arguments of a command line.
pub struct CertFiles {
    pub cert: String,
    pub key: String,
}

impl CertFiles {
    pub fn new(cert: &Path, key: &Path) -> CertFiles {
        CertFiles {
            cert: path_arg(cert),
            key: path_arg(key),
        }
    }

    /// FILE.pem and FILE.key in `dir` (made by another tool, such as openssl).
    pub fn in_dir(dir: &Path, file: &str) -> CertFiles {
        CertFiles::new(
            &dir.join(format!("{file}.pem")),
            &dir.join(format!("{file}.key")),
        )
    }
}

/// A path as a command-line argument.
pub fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

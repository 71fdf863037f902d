//! The `--acl` file: rules (who, operations, functions), token lines, and the match.
//!
//! One rule a line, `#` starts a comment:
//! `WHO OPERATIONS FUNCTIONS` where WHO is `cn:GLOB`, `addr:IP[/BITS]` or `token:NAME`,
//! OPERATIONS a comma list of submit, work, status, ping, admin, and FUNCTIONS a comma list
//! of names with `*` globs (for `ping`, of schedule entry ids). `token NAME SHA256-HEX` defines a bearer token. A connection gets the
//! union of every rule that matches it. Errors name the line and column so an operator can
//! find the mistake without reading the parser.

use std::fmt;
use std::net::IpAddr;

/// What a request asks to do; `admin` includes every other operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Submit,
    Work,
    Status,
    /// Report a run of a heartbeat schedule entry (`/ping/ID`); its "function" is the id.
    Ping,
    Admin,
}

impl Operation {
    pub fn name(self) -> &'static str {
        match self {
            Operation::Submit => "submit",
            Operation::Work => "work",
            Operation::Status => "status",
            Operation::Ping => "ping",
            Operation::Admin => "admin",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Operation::Submit => 1,
            Operation::Work => 2,
            Operation::Status => 4,
            Operation::Admin => 8,
            Operation::Ping => 16,
        }
    }

    fn parse(word: &str) -> Option<Operation> {
        match word {
            "submit" => Some(Operation::Submit),
            "work" => Some(Operation::Work),
            "status" => Some(Operation::Status),
            "ping" => Some(Operation::Ping),
            "admin" => Some(Operation::Admin),
            _ => None,
        }
    }
}

/// A connection's identity: its certificate's name when it has one, else its peer address;
/// an HTTP request with a valid bearer token is `token:NAME` instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    Cn(String),
    Addr(IpAddr),
    Token(String),
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A certificate's name is the peer's: escaped wherever it is shown.
            Identity::Cn(name) => write!(f, "cn:{}", crate::peer_text::shown(name)),
            Identity::Addr(ip) => write!(f, "addr:{ip}"),
            Identity::Token(name) => write!(f, "token:{name}"),
        }
    }
}

/// A parse error at a 1-based line and column.
#[derive(Debug, PartialEq, Eq)]
pub struct AclError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for AclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

#[derive(Debug)]
enum Who {
    Cn(String),
    Net { base: IpAddr, bits: u8 },
    Token(String),
}

#[derive(Debug)]
struct Rule {
    who: Who,
    operations: u8,
    functions: Vec<String>,
}

/// A parsed ACL: rules in file order and the bearer tokens' SHA-256 digests.
#[derive(Debug, Default)]
pub struct Acl {
    rules: Vec<Rule>,
    tokens: Vec<(String, [u8; 32])>,
}

/// The words of a line with their 1-based columns, up to a `#` comment.
fn words(line: &str) -> Vec<(usize, &str)> {
    let body = line.split('#').next().unwrap_or("");
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in body.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s + 1, &body[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s + 1, &body[s..]));
    }
    out
}

fn hex_digest(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

fn parse_net(text: &str) -> Result<Who, String> {
    let (ip, bits) = match text.split_once('/') {
        Some((ip, bits)) => (ip, Some(bits)),
        None => (text, None),
    };
    let base: IpAddr = ip
        .parse()
        .map_err(|_| format!("'{ip}' is not an IP address"))?;
    let max = if base.is_ipv4() { 32 } else { 128 };
    let bits = match bits {
        None => max,
        Some(b) => match b.parse::<u8>() {
            Ok(n) if n <= max => n,
            _ => return Err(format!("'/{b}' is not a prefix length from 0 to {max}")),
        },
    };
    Ok(Who::Net { base, bits })
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && b != b',')
}

impl Acl {
    /// Parses a whole file; the first error wins, so a bad file is never half applied.
    pub fn parse(text: &str) -> Result<Acl, AclError> {
        let mut acl = Acl::default();
        let mut token_refs = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let at = |column: usize, message: String| AclError {
                line: index + 1,
                column,
                message,
            };
            let words = words(line);
            let Some(&(first_col, first)) = words.first() else {
                continue;
            };
            if first == "token" {
                if !super::token::SUPPORTED {
                    return Err(at(
                        first_col,
                        "bearer tokens need SHA-256, which a build without the tls feature lacks"
                            .into(),
                    ));
                }
                let [_, (name_col, name), (hex_col, hex)] = words[..] else {
                    return Err(at(first_col, "expected: token NAME SHA256-HEX".into()));
                };
                if !valid_name(name) {
                    return Err(at(name_col, format!("'{name}' is not a token name")));
                }
                if acl.tokens.iter().any(|(n, _)| n == name) {
                    return Err(at(name_col, format!("token '{name}' is defined twice")));
                }
                let Some(digest) = hex_digest(hex) else {
                    return Err(at(
                        hex_col,
                        "expected 64 hex digits (the SHA-256 of the secret)".into(),
                    ));
                };
                acl.tokens.push((name.to_string(), digest));
                continue;
            }
            let [(_, who), (ops_col, ops), (fn_col, fns)] = words[..] else {
                let column = words.get(3).map_or(first_col, |w| w.0);
                return Err(at(column, "expected: WHO OPERATIONS FUNCTIONS".into()));
            };
            let who = if let Some(glob) = who.strip_prefix("cn:") {
                if !valid_name(glob) {
                    return Err(at(first_col + 3, "a certificate name is missing".into()));
                }
                Who::Cn(glob.to_string())
            } else if let Some(net) = who.strip_prefix("addr:") {
                parse_net(net).map_err(|m| at(first_col + 5, m))?
            } else if let Some(name) = who.strip_prefix("token:") {
                if !valid_name(name) {
                    return Err(at(first_col + 6, "a token name is missing".into()));
                }
                token_refs.push((index + 1, first_col + 6, name.to_string()));
                Who::Token(name.to_string())
            } else {
                return Err(at(
                    first_col,
                    format!("'{who}' is not cn:NAME, addr:IP[/BITS] or token:NAME"),
                ));
            };
            let mut operations = 0;
            let mut col = ops_col;
            for word in ops.split(',') {
                let Some(op) = Operation::parse(word) else {
                    return Err(at(
                        col,
                        format!("'{word}' is not an operation (submit, work, status, ping, admin)"),
                    ));
                };
                operations |= op.bit();
                col += word.len() + 1;
            }
            let mut functions = Vec::new();
            let mut col = fn_col;
            for word in fns.split(',') {
                if word.is_empty() {
                    return Err(at(col, "an empty function name".into()));
                }
                functions.push(word.to_string());
                col += word.len() + 1;
            }
            acl.rules.push(Rule {
                who,
                operations,
                functions,
            });
        }
        // Checked after the whole file so a token may be defined below the rule that uses it.
        if let Some((line, column, name)) = token_refs
            .into_iter()
            .find(|(_, _, name)| !acl.tokens.iter().any(|(n, _)| n == name))
        {
            return Err(AclError {
                line,
                column,
                message: format!("token '{name}' has no 'token {name} SHA256-HEX' line"),
            });
        }
        Ok(acl)
    }

    /// True when some rule matching `who` grants `op` on `function` (`None`: an operation
    /// not about one function, such as most admin commands, needs a rule whose functions are
    /// `*`). `admin` grants everything.
    pub fn allows(&self, who: &Identity, op: Operation, function: Option<&[u8]>) -> bool {
        self.rules.iter().any(|rule| {
            rule_matches(&rule.who, who)
                && (rule.operations & (op.bit() | Operation::Admin.bit())) != 0
                && rule.functions.iter().any(|glob| match function {
                    Some(f) => glob_matches(glob.as_bytes(), f),
                    None => glob == "*",
                })
        })
    }

    /// The token whose SHA-256 digest is `digest`, compared in constant time over every token
    /// so the time taken does not say which bytes matched.
    pub fn token_for_digest(&self, digest: &[u8; 32]) -> Option<&str> {
        let mut found = None;
        for (name, expected) in &self.tokens {
            let diff = expected
                .iter()
                .zip(digest)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 {
                found = Some(name.as_str());
            }
        }
        found
    }

    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// The file defines bearer tokens (`token NAME HEX` lines).
    pub fn defines_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }
}

fn rule_matches(who: &Who, identity: &Identity) -> bool {
    match (who, identity) {
        (Who::Cn(glob), Identity::Cn(name)) => glob_matches(glob.as_bytes(), name.as_bytes()),
        (Who::Token(rule), Identity::Token(name)) => rule == name,
        (Who::Net { base, bits }, Identity::Addr(ip)) => in_net(*base, *bits, *ip),
        _ => false,
    }
}

fn in_net(base: IpAddr, bits: u8, ip: IpAddr) -> bool {
    // An IPv4 peer reached through a dual-stack socket arrives as ::ffff:a.b.c.d.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match (base, ip) {
        (IpAddr::V4(b), IpAddr::V4(i)) => prefix_eq(&b.octets(), &i.octets(), bits),
        (IpAddr::V6(b), IpAddr::V6(i)) => prefix_eq(&b.octets(), &i.octets(), bits),
        _ => false,
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let full = usize::from(bits / 8);
    let rest = bits % 8;
    if a[..full] != b[..full] {
        return false;
    }
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[full] & mask == b[full] & mask
    }
}

/// `*` matches any run of bytes (so `report.*` is the prefix glob and `web-*` a name glob).
fn glob_matches(glob: &[u8], name: &[u8]) -> bool {
    let (mut g, mut n) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while n < name.len() {
        if g < glob.len() && glob[g] == b'*' {
            back = Some((g, n));
            g += 1;
        } else if g < glob.len() && glob[g] == name[n] {
            g += 1;
            n += 1;
        } else if let Some((bg, bn)) = back {
            g = bg + 1;
            n = bn + 1;
            back = Some((bg, bn + 1));
        } else {
            return false;
        }
    }
    glob[g..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
#[path = "acl_tests.rs"]
mod tests;

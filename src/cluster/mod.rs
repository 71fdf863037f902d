//! Several servers, one schedule (issue 19): the etcd conversation. `etcd` is the pure codec
//! for etcd's v3 JSON gateway; the election and claims machine comes with it.

pub mod etcd;

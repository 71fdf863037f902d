//! The packet-type table of the Gearman protocol (numbers 1–42) and the two magics.

/// The 4-byte magic that starts every binary packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Magic {
    /// `\0REQ`: client or worker to server.
    Req,
    /// `\0RES`: server to client or worker.
    Res,
}

impl Magic {
    pub const REQ: [u8; 4] = *b"\0REQ";
    pub const RES: [u8; 4] = *b"\0RES";

    pub fn from_bytes(b: &[u8]) -> Option<Magic> {
        match b {
            b"\0REQ" => Some(Magic::Req),
            b"\0RES" => Some(Magic::Res),
            _ => None,
        }
    }
}

macro_rules! packet_types {
    ($($name:ident = $num:expr),* $(,)?) => {
        /// Every packet type of the protocol, named one-to-one after the Gearman constants
        /// (SUBMIT_JOB_LOW_BG -> SubmitJobLowBg).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum PacketType { $($name = $num),* }

        impl PacketType {
            pub fn from_u32(n: u32) -> Option<PacketType> {
                match n { $($num => Some(PacketType::$name),)* _ => None }
            }

            /// The protocol's own upper-case name, for logs and the HTTP `X-Gearman-Command`.
            pub fn name(self) -> &'static str {
                match self { $(PacketType::$name => packet_types!(@upper $name),)* }
            }
        }
    };
    (@upper CanDo) => { "CAN_DO" };
    (@upper CantDo) => { "CANT_DO" };
    (@upper ResetAbilities) => { "RESET_ABILITIES" };
    (@upper PreSleep) => { "PRE_SLEEP" };
    (@upper Unused) => { "UNUSED" };
    (@upper Noop) => { "NOOP" };
    (@upper SubmitJob) => { "SUBMIT_JOB" };
    (@upper JobCreated) => { "JOB_CREATED" };
    (@upper GrabJob) => { "GRAB_JOB" };
    (@upper NoJob) => { "NO_JOB" };
    (@upper JobAssign) => { "JOB_ASSIGN" };
    (@upper WorkStatus) => { "WORK_STATUS" };
    (@upper WorkComplete) => { "WORK_COMPLETE" };
    (@upper WorkFail) => { "WORK_FAIL" };
    (@upper GetStatus) => { "GET_STATUS" };
    (@upper EchoReq) => { "ECHO_REQ" };
    (@upper EchoRes) => { "ECHO_RES" };
    (@upper SubmitJobBg) => { "SUBMIT_JOB_BG" };
    (@upper Error) => { "ERROR" };
    (@upper StatusRes) => { "STATUS_RES" };
    (@upper SubmitJobHigh) => { "SUBMIT_JOB_HIGH" };
    (@upper SetClientId) => { "SET_CLIENT_ID" };
    (@upper CanDoTimeout) => { "CAN_DO_TIMEOUT" };
    (@upper AllYours) => { "ALL_YOURS" };
    (@upper WorkException) => { "WORK_EXCEPTION" };
    (@upper OptionReq) => { "OPTION_REQ" };
    (@upper OptionRes) => { "OPTION_RES" };
    (@upper WorkData) => { "WORK_DATA" };
    (@upper WorkWarning) => { "WORK_WARNING" };
    (@upper GrabJobUniq) => { "GRAB_JOB_UNIQ" };
    (@upper JobAssignUniq) => { "JOB_ASSIGN_UNIQ" };
    (@upper SubmitJobHighBg) => { "SUBMIT_JOB_HIGH_BG" };
    (@upper SubmitJobLow) => { "SUBMIT_JOB_LOW" };
    (@upper SubmitJobLowBg) => { "SUBMIT_JOB_LOW_BG" };
    (@upper SubmitJobSched) => { "SUBMIT_JOB_SCHED" };
    (@upper SubmitJobEpoch) => { "SUBMIT_JOB_EPOCH" };
    (@upper SubmitReduceJob) => { "SUBMIT_REDUCE_JOB" };
    (@upper SubmitReduceJobBackground) => { "SUBMIT_REDUCE_JOB_BACKGROUND" };
    (@upper GrabJobAll) => { "GRAB_JOB_ALL" };
    (@upper JobAssignAll) => { "JOB_ASSIGN_ALL" };
    (@upper GetStatusUnique) => { "GET_STATUS_UNIQUE" };
    (@upper StatusResUnique) => { "STATUS_RES_UNIQUE" };
}

packet_types! {
    CanDo = 1,
    CantDo = 2,
    ResetAbilities = 3,
    PreSleep = 4,
    Unused = 5,
    Noop = 6,
    SubmitJob = 7,
    JobCreated = 8,
    GrabJob = 9,
    NoJob = 10,
    JobAssign = 11,
    WorkStatus = 12,
    WorkComplete = 13,
    WorkFail = 14,
    GetStatus = 15,
    EchoReq = 16,
    EchoRes = 17,
    SubmitJobBg = 18,
    Error = 19,
    StatusRes = 20,
    SubmitJobHigh = 21,
    SetClientId = 22,
    CanDoTimeout = 23,
    AllYours = 24,
    WorkException = 25,
    OptionReq = 26,
    OptionRes = 27,
    WorkData = 28,
    WorkWarning = 29,
    GrabJobUniq = 30,
    JobAssignUniq = 31,
    SubmitJobHighBg = 32,
    SubmitJobLow = 33,
    SubmitJobLowBg = 34,
    SubmitJobSched = 35,
    SubmitJobEpoch = 36,
    SubmitReduceJob = 37,
    SubmitReduceJobBackground = 38,
    GrabJobAll = 39,
    JobAssignAll = 40,
    GetStatusUnique = 41,
    StatusResUnique = 42,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_maps_back_to_itself() {
        for n in 1..=42u32 {
            let t = PacketType::from_u32(n).expect("1..=42 are all defined");
            assert_eq!(t as u32, n);
        }
        assert_eq!(PacketType::from_u32(0), None);
        assert_eq!(PacketType::from_u32(43), None);
        assert_eq!(PacketType::SubmitJobLowBg.name(), "SUBMIT_JOB_LOW_BG");
        assert_eq!(
            PacketType::from_u32(38).map(|t| t.name()),
            Some("SUBMIT_REDUCE_JOB_BACKGROUND")
        );
    }

    #[test]
    fn magics() {
        assert_eq!(Magic::from_bytes(b"\0REQ"), Some(Magic::Req));
        assert_eq!(Magic::from_bytes(b"\0RES"), Some(Magic::Res));
        assert_eq!(Magic::from_bytes(b"\0XYZ"), None);
    }
}

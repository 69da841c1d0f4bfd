"""Every permission request of a turn: the one policy that decides it (the shield's rules, or autoApprove), the approval
wire format a person answers over A2A, and the gate that asks, waits for the answer or the deadline, and
audits."""

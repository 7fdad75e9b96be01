//! Port glue of the `net` register block.

use weft_model::net_regs::{NetIn, NetOut};

crate::hdl_ports!(
    weft_hdl::net_regs::NetRegs,
    NetIn {
        eng_raddr,
        eng_re,
        eng_waddr,
        eng_wdata,
        eng_wstrb,
        eng_we,
        inc,
        seq_in,
    },
    NetOut {
        eng_rdata,
        enable,
        card_mac,
        card_ip,
        kv_mac,
        kv_ip,
        kv_port,
        grad_mac,
        grad_ip,
        grad_port,
        pack_max,
        pack_wait,
        seq_we,
        seq_wdata,
        wt_we,
        wt_addr,
        wt_data,
    }
);

//! The walker on small circuits whose depth is known.

use super::*;

fn run(v: &str) -> TimingReport {
    let opts = TimingOptions {
        clocks: vec![Clock::new("clk", 250.0)],
        ..TimingOptions::default()
    };
    estimate_verilog(v, "top", &SynthOptions::default(), false, &[], &opts)
        .unwrap_or_else(|e| panic!("{e}"))
        .0
}

fn clk(r: &TimingReport) -> &DomainReport {
    r.domain("clk").expect("a clk domain")
}

#[test]
fn a_registered_64_bit_adder_is_one_lut_level_and_its_carry_chain() {
    if !crate::yosys::usable_or_skip(
        "a_registered_64_bit_adder_is_one_lut_level_and_its_carry_chain",
    ) {
        return;
    }
    let r = run(
        "module top(input clk, input [63:0] a, input [63:0] b, output reg [63:0] q);
        reg [63:0] ra, rb;
        always @(posedge clk) begin ra <= a; rb <= b; q <= ra + rb; end
        endmodule",
    );
    let d = clk(&r);
    assert_eq!(d.max_luts, 1, "{d:#?}");
    let w = &d.worst[0];
    assert_eq!(w.carry, 16, "64 bits are 16 CARRY4: {w:#?}");
    assert!(w.endpoint.starts_with("q["), "{w:#?}");
    // FF 0.10 + LUT 0.45 + 16 carries of 0.06.
    assert!((w.delay_ns - 1.51).abs() < 0.02, "{w:#?}");
    assert_eq!(d.over_budget, 0);
    // The inputs reach ra/rb straight: no LUT.
    assert_eq!(r.ports.input_to_reg_luts, 0);
    assert_eq!(r.ports.reg_to_output_luts, 0);
}

#[test]
fn a_128_input_xor_is_three_lut_levels() {
    if !crate::yosys::usable_or_skip("a_128_input_xor_is_three_lut_levels") {
        return;
    }
    let r = run("module top(input clk, input [127:0] a, output reg q);
        reg [127:0] ra;
        always @(posedge clk) begin ra <= a; q <= ^ra; end
        endmodule");
    let d = clk(&r);
    assert_eq!(d.max_luts, 3, "{d:#?}");
    assert_eq!(d.worst[0].endpoint, "q");
    assert_eq!(d.worst[0].start_type, "FDRE");
}

#[test]
fn a_block_ram_read_costs_its_clock_to_out_then_the_logic_after_it() {
    if !crate::yosys::usable_or_skip(
        "a_block_ram_read_costs_its_clock_to_out_then_the_logic_after_it",
    ) {
        return;
    }
    let r = run(
        "module top(input clk, input [9:0] wa, input [9:0] ra, input [31:0] d,
                    input we, output reg [31:0] q);
        reg [31:0] mem [0:1023];
        reg [31:0] r;
        reg [9:0] rwa, rra; reg [31:0] rd; reg rwe;
        always @(posedge clk) begin
            rwa <= wa; rra <= ra; rd <= d; rwe <= we;
            if (rwe) mem[rwa] <= rd;
            r <= mem[rra];
            q <= r ^ {r[15:0], r[31:16]};
        end
        endmodule",
    );
    let d = clk(&r);
    let w = &d.worst[0];
    assert!(w.start_type.starts_with("RAMB"), "{w:#?}");
    assert_eq!(w.luts, 1, "{w:#?}");
    // An unregistered read (1.20) and a LUT (0.45).
    assert!((w.delay_ns - 1.65).abs() < 0.02, "{w:#?}");
    // The RAM's own inputs come straight from registers.
    let ram_in = d
        .by_block
        .iter()
        .chain(d.worst.iter())
        .filter(|p| p.endpoint_type.starts_with("RAMB"))
        .map(|p| p.luts)
        .max();
    assert!(ram_in.unwrap_or(0) <= 1, "{d:#?}");
}

#[test]
fn paths_are_costed_per_clock_and_crossings_are_counted_not_costed() {
    if !crate::yosys::usable_or_skip(
        "paths_are_costed_per_clock_and_crossings_are_counted_not_costed",
    ) {
        return;
    }
    let opts = TimingOptions {
        clocks: vec![Clock::new("fast", 250.0), Clock::new("slow", 125.0)],
        ..TimingOptions::default()
    };
    let v = "module top(input fast, input slow, input [127:0] a, output reg q, output reg p);
        reg [127:0] ra; reg s1, s2;
        always @(posedge slow) begin ra <= a; q <= ^ra; end
        always @(posedge fast) begin s1 <= ra[0]; s2 <= s1; p <= s2; end
        endmodule";
    let (r, _) = estimate_verilog(v, "top", &SynthOptions::default(), false, &[], &opts).unwrap();
    let slow = r.domain("slow").expect("slow");
    assert_eq!(slow.max_luts, 3);
    assert_eq!(slow.budget_ns, 7.65);
    let fast = r.domain("fast").expect("fast");
    assert_eq!(fast.budget_ns, 3.65);
    assert_eq!(
        fast.crossings, 1,
        "s1 is fed from the slow clock: {fast:#?}"
    );
    assert!(fast.max_luts == 0, "{fast:#?}");
}

#[test]
fn a_deep_chain_is_over_budget_and_named_by_its_nets() {
    if !crate::yosys::usable_or_skip("a_deep_chain_is_over_budget_and_named_by_its_nets") {
        return;
    }
    // Twelve dependent 32-bit compares-and-adds: far beyond 4 ns.
    let mut body = String::from("wire [31:0] s0 = x;\n");
    for i in 1..=12 {
        body += &format!(
            "wire [31:0] s{i} = (s{p}[{b}] ^ y[{b}]) ? s{p} + y : s{p} - {i};\n",
            p = i - 1,
            b = i
        );
    }
    let v = format!(
        "module top(input clk, input [31:0] a, input [31:0] c, output reg [31:0] q);
        reg [31:0] x, y;
        {body}
        always @(posedge clk) begin x <= a; y <= c; q <= s12; end
        endmodule"
    );
    let r = run(&v);
    let d = clk(&r);
    assert!(d.over_budget > 0, "{d:#?}");
    let w = &d.worst[0];
    assert!(w.luts >= 12, "{w:#?}");
    assert!(w.nets.iter().any(|n| n.starts_with("s")), "{w:#?}");
    assert!(!r.fits());
}

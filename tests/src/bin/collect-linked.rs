//! Prints the name of every tool `register_all_tools` finds. The two tool crates are linked only through
//! `yiem_core::link_tools!`.
yiem_core::link_tools!(tools_a, tools_b);
use yiem_core::store::{ToolStore, register_all_tools};

fn main() {
    let store = ToolStore::new("linked");
    let names = register_all_tools(&store).expect("no duplicate tools");
    println!("{}", names.join(","));
}

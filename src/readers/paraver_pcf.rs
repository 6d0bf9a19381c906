//! The Paraver configuration (`.pcf`) and resource-name (`.row`) files that
//! sit beside a `.prv` trace.

use std::collections::HashMap;

use compact_str::CompactString;

/// An event type of a `.pcf`: type, name, and named values.
pub type PcfEventType = (i64, String, Vec<(i64, String)>);

/// What a `.pcf` file says about states and events.
#[derive(Debug, Default, Clone)]
pub struct Pcf {
    /// State value → name.
    pub states: Vec<(i64, String)>,
    /// State value → colour.
    pub colors: HashMap<i64, [u8; 3]>,
    /// Event type → (name, value names).
    pub event_types: Vec<PcfEventType>,
    /// Time unit given by `UNITS` (e.g. `NANOSEC`, `MICROSEC`).
    pub units: Option<String>,
}

const KEYWORDS: [&str; 8] = [
    "STATES",
    "STATES_COLOR",
    "EVENT_TYPE",
    "VALUES",
    "DEFAULT_OPTIONS",
    "DEFAULT_SEMANTIC",
    "GRADIENT_COLOR",
    "GRADIENT_NAMES",
];

/// Parses a `.pcf` file. Lines it does not understand are skipped: the file
/// only names things, and a damaged name table must not prevent reading the
/// trace.
pub fn parse_pcf(text: &str) -> Pcf {
    #[derive(PartialEq)]
    enum Sec {
        None,
        States,
        Colors,
        EventType,
        Values,
        Options,
    }
    let mut pcf = Pcf::default();
    let mut sec = Sec::None;
    // indices into pcf.event_types of the types of the current block
    let mut block: Vec<usize> = Vec::new();
    // a blank line ends a section, except right after its keyword
    let mut fresh = false;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() {
            if fresh {
                continue;
            }
            if sec != Sec::EventType {
                sec = Sec::None;
            }
            if sec == Sec::Values || sec == Sec::None {
                block.clear();
            }
            continue;
        }
        fresh = false;
        let first = line.split_whitespace().next().unwrap_or("");
        if KEYWORDS.contains(&first) && line.split_whitespace().count() == 1 {
            fresh = true;
            sec = match first {
                "STATES" => Sec::States,
                "STATES_COLOR" => Sec::Colors,
                "EVENT_TYPE" => {
                    block.clear();
                    Sec::EventType
                }
                "VALUES" => Sec::Values,
                "DEFAULT_OPTIONS" => Sec::Options,
                _ => Sec::None,
            };
            continue;
        }
        match sec {
            Sec::States => {
                if let Some((id, name)) = split_id(line) {
                    pcf.states.push((id, name.to_string()));
                }
            }
            Sec::Colors => {
                if let Some((id, rest)) = split_id(line)
                    && let Some(c) = parse_color(rest)
                {
                    pcf.colors.insert(id, c);
                }
            }
            Sec::EventType => {
                // "gradient type name..." (fields separated by any run of blanks)
                let ty_and_name = split_id(line).and_then(|(_gradient, rest)| split_id(rest));
                if let Some((ty, name)) = ty_and_name {
                    pcf.event_types.push((ty, name.to_string(), Vec::new()));
                    block.push(pcf.event_types.len() - 1);
                }
            }
            Sec::Values => {
                if let Some((v, name)) = split_id(line) {
                    for &b in &block {
                        pcf.event_types[b].2.push((v, name.to_string()));
                    }
                }
            }
            Sec::Options => {
                let mut it = line.split_whitespace();
                if it.next() == Some("UNITS") {
                    pcf.units = it.next().map(str::to_string);
                }
            }
            Sec::None => {}
        }
    }
    pcf
}

fn split_id(line: &str) -> Option<(i64, &str)> {
    let line = line.trim();
    let end = line.find(char::is_whitespace).unwrap_or(line.len());
    let id = line[..end].parse::<i64>().ok()?;
    Some((id, line[end..].trim()))
}

fn parse_color(s: &str) -> Option<[u8; 3]> {
    let s = s.trim().trim_start_matches('{').trim_end_matches('}');
    let mut it = s.split(',').map(|p| p.trim().parse::<u8>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

/// Names from a `.row` file, by level (`CPU`, `NODE`, `THREAD`, `TASK`, ...),
/// each held in place where it fits (24 bytes).
pub fn parse_row(text: &str) -> HashMap<String, Vec<CompactString>> {
    let mut out: HashMap<String, Vec<CompactString>> = HashMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() == 4 && parts[0] == "LEVEL" && parts[2] == "SIZE" {
            let Ok(n) = parts[3].parse::<usize>() else {
                continue;
            };
            let mut names = Vec::with_capacity(n.min(1 << 20));
            for _ in 0..n {
                match lines.next() {
                    Some(l) => names.push(CompactString::from(l.trim())),
                    None => break,
                }
            }
            out.insert(parts[1].to_string(), names);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcf_states_colors_and_events() {
        let text = "EVENT_TYPE\n9   50000001    MPI Point-to-point\nVALUES\n2   MPI_Recv\n\nDEFAULT_OPTIONS\n\nLEVEL THREAD\nUNITS MICROSEC\n\nSTATES\n0    Idle\n1    Running\n\nSTATES_COLOR\n0    {117,195,255}\n1    {0,0,255}\n\n\nEVENT_TYPE\n6    40000001    Application\n6    40000003    Flushing Traces\nVALUES\n1      Begin\n0      End\n\n\nEVENT_TYPE\n6    40000011    I/O Size\n\n";
        let p = parse_pcf(text);
        assert_eq!(p.states, vec![(0, "Idle".into()), (1, "Running".into())]);
        assert_eq!(p.colors[&1], [0, 0, 255]);
        assert_eq!(p.event_types.len(), 4);
        assert_eq!(
            p.event_types[0],
            (
                50000001,
                "MPI Point-to-point".into(),
                vec![(2, "MPI_Recv".into())]
            )
        );
        assert_eq!(p.event_types[1].1, "Application");
        assert_eq!(
            p.event_types[2].2,
            vec![(1, "Begin".into()), (0, "End".into())]
        );
        assert!(p.event_types[3].2.is_empty());
        assert_eq!(p.units.as_deref(), Some("MICROSEC"));
    }

    #[test]
    fn row_levels() {
        let r = parse_row("LEVEL CPU SIZE 2\ncpu a\ncpu b\n\nLEVEL THREAD SIZE 1\nrank 0\n");
        assert_eq!(r["CPU"], vec!["cpu a", "cpu b"]);
        assert_eq!(r["THREAD"], vec!["rank 0"]);
    }
}

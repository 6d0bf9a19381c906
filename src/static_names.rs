//! Names read at run time (from a cache, from another process) kept as
//! `&'static str` where the program's own are: each distinct name once
//! for the whole run, and a bounded number of them.

use std::sync::Mutex;

/// A set of names, each kept once; at most [`StaticNames::MOST`] of them,
/// of at most `longest` bytes: any other name is `other`.
pub(crate) struct StaticNames {
    names: Mutex<Vec<&'static str>>,
    longest: usize,
    other: &'static str,
}

impl StaticNames {
    /// The most names kept.
    pub(crate) const MOST: usize = 256;

    pub(crate) const fn new(longest: usize, other: &'static str) -> Self {
        StaticNames {
            names: Mutex::new(Vec::new()),
            longest,
            other,
        }
    }

    /// `name` as kept (the first time it is met, a copy that lives for the
    /// run), or `other` beyond the bounds.
    pub(crate) fn get(&self, name: &str) -> &'static str {
        let Ok(mut names) = self.names.lock() else {
            return self.other;
        };
        if let Some(n) = names.iter().find(|n| **n == name) {
            return n;
        }
        if names.len() >= Self::MOST || name.len() > self.longest {
            return self.other;
        }
        let kept: &'static str = Box::leak(name.to_string().into_boxed_str());
        names.push(kept);
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_kept_once_within_the_bounds() {
        let s = StaticNames::new(4, "other");
        let a = s.get("abc");
        assert!(std::ptr::eq(a, s.get(&String::from("abc"))));
        assert_eq!(s.get("abcde"), "other");
        for k in 0..StaticNames::MOST {
            s.get(&format!("{k}"));
        }
        assert_eq!(s.get("zz"), "other");
        assert_eq!(s.get("abc"), "abc");
    }
}

//! Installed software, read from the results of Qualys's information
//! gathered checks that list it: QID 90235 (applications from the Windows
//! Installer) and 45141 (packages on Unix and Linux). Their results are
//! tab-separated tables under a header row; the columns are found by name
//! (a `Name` or `Package` column and a `Version` column), so a layout with
//! more columns or another order reads the same.

/// One installed package or application.
#[derive(Debug, Clone, PartialEq)]
pub struct Software {
    pub name: String,
    pub version: Option<String>,
}

/// The checks whose results list installed software.
pub const ENUMERATION_QIDS: [&str; 2] = ["90235", "45141"];

/// The software the results of check `qid` list; empty for other checks.
pub fn parse(qid: &str, results: &str) -> Vec<Software> {
    if !ENUMERATION_QIDS.contains(&qid) {
        return vec![];
    }
    let mut software = Vec::new();
    let mut columns: Option<(usize, Option<usize>)> = None;
    for line in results.lines() {
        let cells: Vec<&str> = line.split('\t').map(str::trim).collect();
        if cells.len() < 2 {
            // A caption between tables ends the one before.
            columns = None;
            continue;
        }
        let header = |names: &[&str]| {
            cells
                .iter()
                .position(|c| names.iter().any(|n| c.eq_ignore_ascii_case(n)))
        };
        if let Some(name) = header(&["name", "package", "application", "display name"]) {
            columns = Some((name, header(&["version", "display version"])));
            continue;
        }
        let Some((name, version)) = columns else {
            continue;
        };
        let Some(app) = cells.get(name).filter(|n| !n.is_empty()) else {
            continue;
        };
        software.push(Software {
            name: app.to_string(),
            version: version
                .and_then(|v| cells.get(v))
                .filter(|v| !v.is_empty())
                .map(|v| v.to_string()),
        });
    }
    software
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_read_by_their_header() {
        let windows = "Recently installed applications:\nName\tVersion\tInstall Date\n\
            Google Chrome\t119.0.6045.160\t20231120\n7-Zip 23.01 (x64)\t23.01\t\n";
        assert_eq!(
            parse("90235", windows),
            [
                Software {
                    name: "Google Chrome".into(),
                    version: Some("119.0.6045.160".into())
                },
                Software {
                    name: "7-Zip 23.01 (x64)".into(),
                    version: Some("23.01".into())
                },
            ]
        );
        let unix = "list of packages\nPackage\tArch\tVersion\nopenssl\tx86_64\t3.0.7-25.el9\n";
        assert_eq!(
            parse("45141", unix),
            [Software {
                name: "openssl".into(),
                version: Some("3.0.7-25.el9".into())
            }]
        );
        assert!(parse("11827", windows).is_empty(), "not a software check");
        assert!(parse("90235", "no table here").is_empty());
    }
}

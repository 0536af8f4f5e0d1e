//! Installed software, read from the output of Tenable's enumeration
//! plugins: 20811 (Windows, from the registry: `Name  [version X]
//! [installed on D]`), 22869 (over SSH: `name-version-release|epoch` for
//! RPM systems, `ii  name  version  arch  description` for dpkg ones) and
//! 83991 (macOS: `Name  [version X]`). Lines in other shapes are skipped.

/// One installed package or application.
#[derive(Debug, Clone, PartialEq)]
pub struct Software {
    pub name: String,
    pub version: Option<String>,
}

/// The software `output` of plugin `plugin_id` lists; empty for other
/// plugins.
pub fn parse(plugin_id: &str, output: &str) -> Vec<Software> {
    match plugin_id {
        "20811" | "83991" => bracketed(output),
        "22869" => packages(output),
        _ => vec![],
    }
}

/// The first section of the output: the lines after its first header
/// (a line ending with `:`) up to the next header, which for 20811 is the
/// list of installed updates.
fn first_section(output: &str) -> impl Iterator<Item = &str> {
    output
        .lines()
        .skip_while(|line| !line.trim_end().ends_with(':'))
        .skip(1)
        .take_while(|line| !line.trim_end().ends_with(':'))
        .map(str::trim)
        .filter(|line| !line.is_empty())
}

fn bracketed(output: &str) -> Vec<Software> {
    first_section(output)
        .filter_map(|line| {
            let name = line.split(" [").next()?.trim();
            let version = line
                .split("[version ")
                .nth(1)
                .and_then(|rest| rest.split(']').next())
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(String::from);
            (!name.is_empty()).then(|| Software {
                name: name.to_string(),
                version,
            })
        })
        .collect()
}

fn packages(output: &str) -> Vec<Software> {
    first_section(output)
        .filter_map(|line| {
            if let Some(rest) = line.strip_prefix("ii ") {
                let mut columns = rest.split_whitespace();
                let name = columns.next()?;
                // Multi-arch packages are listed as `name:arch`.
                let name = name.split(':').next().unwrap_or(name);
                return Some(Software {
                    name: name.to_string(),
                    version: columns.next().map(String::from),
                });
            }
            let (package, _epoch) = line.split_once('|')?;
            // name-version-release, where the name may itself hold dashes.
            let mut parts = package.rsplitn(3, '-');
            let release = parts.next()?;
            let version = parts.next()?;
            let name = parts.next()?;
            Some(Software {
                name: name.to_string(),
                version: Some(format!("{version}-{release}")),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(name: &str, version: Option<&str>) -> Software {
        Software {
            name: name.into(),
            version: version.map(String::from),
        }
    }

    #[test]
    fn windows_registry_lines_and_not_the_updates() {
        let output = "\nThe following software are installed on the remote host :\n\n\
            Google Chrome  [version 119.0.6045.160]  [installed on 2023/11/20]\n\
            7-Zip 23.01 (x64)  [version 23.01]\n\
            Some Tool Without Version\n\n\
            The following updates are installed :\n\n\
            Microsoft .NET Framework 4.8 :\n  KB4486153\n";
        assert_eq!(
            parse("20811", output),
            [
                of("Google Chrome", Some("119.0.6045.160")),
                of("7-Zip 23.01 (x64)", Some("23.01")),
                of("Some Tool Without Version", None),
            ]
        );
    }

    #[test]
    fn rpm_and_dpkg_package_lists() {
        let rpm =
            "Here is the list of packages installed on the remote CentOS Linux system : \n\n  \
            bash-4.2.46-34.el7|(none)\n  python-libs-2.7.5-90.el7|(none)\n  garbage line\n";
        assert_eq!(
            parse("22869", rpm),
            [
                of("bash", Some("4.2.46-34.el7")),
                of("python-libs", Some("2.7.5-90.el7"))
            ]
        );
        let dpkg =
            "Here is the list of packages installed on the remote Debian Linux system : \n\n  \
            ii  openssl  3.0.11-1~deb12u2  amd64  Secure Sockets Layer toolkit\n  \
            ii  libc6:amd64  2.36-9+deb12u3  amd64  GNU C Library\n";
        assert_eq!(
            parse("22869", dpkg),
            [
                of("openssl", Some("3.0.11-1~deb12u2")),
                of("libc6", Some("2.36-9+deb12u3"))
            ]
        );
        assert!(parse("9062", rpm).is_empty());
    }
}

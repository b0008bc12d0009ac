//! The deployment templates: the SAM template and the infra stack define the
//! same tables and wire the function as documented, and cfn-lint passes them.

use super::*;

fn yaml(file: &str) -> Yaml {
    serde_yaml::from_str(&std::fs::read_to_string(project().join(file)).unwrap()).unwrap()
}

/// The `!Sub` suffix of a table's name in a template.
fn table_suffix(properties: &Yaml) -> String {
    let Yaml::Tagged(tagged) = &properties["TableName"] else {
        panic!("TableName must be !Sub \"${{TablePrefix}}…\"")
    };
    tagged
        .value
        .as_str()
        .unwrap()
        .strip_prefix("${TablePrefix}")
        .unwrap()
        .to_owned()
}

fn check_tables(file: &str) {
    let template = yaml(file);
    let resources = template["Resources"].as_mapping().unwrap();
    let tables: Vec<&Yaml> = resources
        .values()
        .filter(|r| r["Type"] == "AWS::DynamoDB::Table")
        .map(|r| &r["Properties"])
        .collect();
    assert_eq!(tables.len(), TABLES.len(), "{file}: one resource per table");
    for table in TABLES {
        let properties = tables
            .iter()
            .find(|p| table_suffix(p) == table.suffix)
            .unwrap_or_else(|| panic!("{file}: no table {}", table.suffix));
        assert_eq!(
            properties["BillingMode"], "PAY_PER_REQUEST",
            "{file} {}",
            table.suffix
        );
        let mut keys = vec![(table.partition_key, "HASH")];
        keys.extend(table.sort_key.map(|k| (k, "RANGE")));
        let schema: Vec<(String, String)> = properties["KeySchema"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|k| {
                (
                    k["AttributeName"].as_str().unwrap().to_owned(),
                    k["KeyType"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = keys
            .iter()
            .map(|((name, _), kind)| (name.to_string(), kind.to_string()))
            .collect();
        assert_eq!(schema, expected, "{file} {} key schema", table.suffix);
        let attributes: Vec<(String, String)> = properties["AttributeDefinitions"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["AttributeName"].as_str().unwrap().to_owned(),
                    a["AttributeType"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = keys
            .iter()
            .map(|((name, kind), _)| {
                (
                    name.to_string(),
                    match kind {
                        KeyKind::S => "S",
                        KeyKind::N => "N",
                    }
                    .to_owned(),
                )
            })
            .collect();
        assert_eq!(attributes, expected, "{file} {} attributes", table.suffix);
        let ttl = &properties["TimeToLiveSpecification"];
        match (table.ttl_attribute, table.retention_attribute) {
            (Some(attribute), _) => {
                assert_eq!(ttl["AttributeName"], attribute, "{file} {}", table.suffix);
                assert_eq!(ttl["Enabled"], true, "{file} {}", table.suffix);
            }
            // On when a retention is set (the SAM template decides by its
            // parameter): the attribute must be the one the store writes.
            (None, Some(attribute)) => {
                assert_eq!(ttl["AttributeName"], attribute, "{file} {}", table.suffix);
            }
            (None, None) => assert!(ttl.is_null(), "{file} {}: no TTL", table.suffix),
        }
        let pitr =
            properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] == true;
        assert_eq!(
            pitr, table.point_in_time_recovery,
            "{file} {} point-in-time recovery",
            table.suffix
        );
    }
}

#[test]
fn the_sam_template_and_the_infra_stack_define_exactly_the_codes_tables() {
    check_tables("template.yaml");
    check_tables("infra/stack.yaml");
}

#[test]
fn the_sam_template_wires_the_function_as_documented() {
    let template = yaml("template.yaml");
    let function = &template["Resources"]["McpFunction"];
    assert_eq!(function["Metadata"]["BuildMethod"], "rust-cargolambda");
    let properties = &function["Properties"];
    assert_eq!(properties["Runtime"], "provided.al2023");
    let parameters = &template["Parameters"];
    assert_eq!(parameters["MemorySize"]["Default"], 1024);
    assert_eq!(parameters["Timeout"]["Default"], 60);
    assert_eq!(parameters["FunctionUrlAuthType"]["Default"], "AWS_IAM");
    assert_eq!(parameters["Architecture"]["Default"], "x86_64");
    let env = properties["Environment"]["Variables"].as_mapping().unwrap();
    for variable in ["MCP_V8_HEAP_BUCKET", "MCP_V8_TABLE_PREFIX"] {
        assert!(env.contains_key(variable), "{variable}");
    }
    let outputs = template["Outputs"].as_mapping().unwrap();
    assert!(outputs.contains_key("FunctionUrl"));
}

#[test]
fn cfn_lint_passes_on_both_templates() {
    crate::common::sam::cfn_lint(&["template.yaml", "infra/stack.yaml"]);
}

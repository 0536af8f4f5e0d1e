-- A second connector serves rmm (NinjaOne), and a config that names no
-- connector means "the area's only one" (0012). Every such rmm config was
-- stored while ConnectWise Automate was the only one, so it says so now.
UPDATE integration_configs SET connector = 'connectwise-automate'
WHERE integration = 'rmm' AND connector IS NULL;

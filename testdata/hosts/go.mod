// Fixture roots hold file names (PCI addresses with ":") that a module zip
// refuses; this file keeps them out of the fleetaudit module.
module fleetaudit.test/fixtures

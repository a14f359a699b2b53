"""The tinygrad bridge: export tinygrad UOp graphs to outerworld, import them back, and
check tinygrad's realizes against outerworld's interpreter (the oracle)."""
from outerworld.tinygrad.export import export, Export, ExportError
from outerworld.tinygrad.importer import to_tinygrad, UopImportError

"""SPARQL value semantics shared by every engine: RDF terms as Python values (`values`), expression
and aggregate evaluation (`expressions`), Allen's interval relations (`allen`). The oracle defines
answers with them and the Spark kernels compute with them; neither owns them."""

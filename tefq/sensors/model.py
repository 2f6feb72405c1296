"""The water-distribution network's vocabulary: SSN/SOSA observations with QUDT values.

One observation message is nine triples, all stamped with the observation's time:
```
wn:obsN   rdf:type               wn:FlowObservation      (Pressure..., Chlorine...)
wn:obsN   sosa:madeBySensor      wn:sensorK
wn:obsN   sosa:observedProperty  wn:flow                 (wn:pressure, wn:chlorine)
wn:obsN   sosa:hasResult         wn:resN
wn:resN   qudt:numericValue      "12.5"^^xsd:double
wn:resN   qudt:unit              unit:M3-PER-HR          (unit:BAR, unit:MilliGM-PER-L)
wn:obsN   sosa:resultTime        "2017-07-14T02:40:00.000Z"^^xsd:dateTime
wn:sensorK sosa:isHostedBy       wn:pipeP                (the sensor's metadata, as in Strider's messages)
wn:pipeP  wn:inZone              wn:zoneZ
```
The network: sensor k measures kind k mod 3 on pipe k div 3 (a pipe carries a flow meter, a
pressure sensor and a chlorine analyser); pipe p lies in zone p div 8.
"""
from __future__ import annotations

NS = "http://example.org/water#"
SOSA = "http://www.w3.org/ns/sosa/"
QUDT = "http://qudt.org/schema/qudt/"
UNIT = "http://qudt.org/vocab/unit/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
STREAM = "http://example.org/water/observations"  # the stream IRI the example queries read
STREAM_DIR = "observations"  # its directory under --out

EPOCH_MS = 1_500_000_000_000  # 2017-07-14T02:40:00Z: the data's first instant
KINDS = ("flow", "pressure", "chlorine")
CLASSES = ("FlowObservation", "PressureObservation", "ChlorineObservation")
UNITS = ("M3-PER-HR", "BAR", "MilliGM-PER-L")
SENSORS_PER_PIPE = len(KINDS)
PIPES_PER_ZONE = 8

# the nine triples of an observation, in message order: (subject kind, predicate IRI)
PREDICATES = (RDF_TYPE, SOSA + "madeBySensor", SOSA + "observedProperty", SOSA + "hasResult",
              QUDT + "numericValue", QUDT + "unit", SOSA + "resultTime", SOSA + "isHostedBy", NS + "inZone")
TRIPLES_PER_OBSERVATION = len(PREDICATES)


def iri(text: str) -> str:
    return f"<{text}>"


def pipe_of(sensor: int) -> int:
    return sensor // SENSORS_PER_PIPE


def zone_of(pipe: int) -> int:
    return pipe // PIPES_PER_ZONE


def kind_of(sensor: int) -> int:
    return sensor % SENSORS_PER_PIPE


__all__ = ["NS", "SOSA", "QUDT", "UNIT", "XSD", "RDF_TYPE", "STREAM", "STREAM_DIR", "EPOCH_MS", "KINDS",
           "CLASSES", "UNITS", "PREDICATES", "TRIPLES_PER_OBSERVATION", "iri", "pipe_of", "zone_of", "kind_of"]

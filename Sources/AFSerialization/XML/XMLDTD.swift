// The document type declaration: the internal subset is parsed for well-formedness and for
// its general-entity, parameter-entity and attribute-list declarations. The external subset
// and external entities are never read.

extension XMLPushParser {
    func doctype(_ c: inout Cur) throws {
        c.i += 9
        try requireS(&c, "the document type declaration")
        _ = try name(&c, "the document type name")
        let hadS = try skipS(&c)
        try need(c, 1, "the document type declaration")
        var external = false
        if c.p[c.i] == 0x53 || c.p[c.i] == 0x50 {
            guard hadS else { throw err("whitespace required before the external identifier", c, c.i) }
            try externalID(&c, systemOptional: false)
            external = true
            _ = try skipS(&c)
            try need(c, 1, "the document type declaration")
        }
        let b = c.p[c.i]
        if b == 0x5B {
            c.i += 1
            phase = .subset
        } else if b == 0x3E {
            c.i += 1
        } else {
            throw err("expected '[' or '>' in the document type declaration", c, c.i)
        }
        hasDoctype = true
        hasExternalSubset = external  // read after the internal subset, so it stops nothing there
    }

    /// `SYSTEM "…"` or `PUBLIC "…" "…"` (the system literal optional for notations).
    func externalID(_ c: inout Cur, systemOptional: Bool) throws {
        if try startsWith(c, "SYSTEM") {
            c.i += 6
            try requireS(&c, "an external identifier")
            try literal(&c, pubid: false)
        } else if try startsWith(c, "PUBLIC") {
            c.i += 6
            try requireS(&c, "an external identifier")
            try literal(&c, pubid: true)
            let save = c.i
            let hadS = try skipS(&c)
            try need(c, 1, "an external identifier")
            let q = c.p[c.i]
            if q == 0x22 || q == 0x27 {
                guard hadS else { throw err("whitespace required between the public and the system literal", c, c.i) }
                try literal(&c, pubid: false)
            } else if !systemOptional {
                throw err("expected the system literal", c, c.i)
            } else {
                c.i = save
            }
        } else {
            throw err("expected SYSTEM or PUBLIC", c, c.i)
        }
    }

    func literal(_ c: inout Cur, pubid: Bool) throws {
        try need(c, 1, "a literal")
        let q = c.p[c.i]
        guard q == 0x22 || q == 0x27 else { throw err("expected a quoted literal", c, c.i) }
        var j = c.i + 1
        while j < c.n && c.p[j] != q {
            if pubid {
                let b = c.p[j]
                if b >= 0x80 || XMLChars.ascii[Int(b)] & 8 == 0 { throw err("character not allowed in a public identifier", c, j) }
            }
            j += 1
        }
        if j == c.n { c.i = j; try need(c, 1, "a literal") }
        c.i = j + 1
    }

    func subset(_ c: inout Cur) throws {
        while true {
            _ = try skipS(&c)
            try need(c, 1, "the internal DTD subset")
            if c.p[c.i] == 0x5D {
                try token(&c) { c in
                    c.i += 1
                    _ = try self.skipS(&c)
                    try self.need(c, 1, "the document type declaration")
                    guard c.p[c.i] == 0x3E else { throw self.err("expected '>' after the internal subset", c, c.i) }
                    c.i += 1
                }
                phase = .prolog
                return
            }
            try token(&c) { try self.declaration(&$0) }
        }
    }

    /// One markup declaration, PI, comment or parameter-entity reference.
    func declaration(_ c: inout Cur) throws {
        let s = c.i
        let b = c.p[c.i]
        if b == 0x25 {
            c.i += 1
            let nr = try name(&c, "a parameter entity name")
            try need(c, 1, "a parameter entity reference")
            guard c.p[c.i] == 0x3B else { throw err("expected ';' after the parameter entity name", c, c.i) }
            c.i += 1
            sawPERef = true
            let nb = bytes(c, nr)
            guard let e = pentities[nb] else {
                if standalone == true { throw err("undeclared parameter entity '%\(String(decoding: nb, as: UTF8.self))'", c, s) }
                stopDecls = true
                return
            }
            guard let text = e.text else {
                if standalone != true { stopDecls = true }
                return  // external: never read
            }
            try expand(nb, text, c, s, pe: true) { sub in
                while true {
                    _ = try self.skipS(&sub)
                    if sub.i >= sub.n { return }
                    if sub.p[sub.i] == 0x5D { throw self.err("']' in a parameter entity between declarations", sub, sub.i) }
                    try self.declaration(&sub)
                }
            }
            return
        }
        guard b == 0x3C else { throw err("unexpected character in the internal DTD subset", c, c.i) }
        try need(c, 2, "the internal DTD subset")
        if c.p[c.i + 1] == 0x3F { try pi(&c, report: false); return }
        if try startsWith(c, "<!--") { try comment(&c, report: false); return }
        if try startsWith(c, "<!ELEMENT") { try elementDecl(&c); return }
        if try startsWith(c, "<!ATTLIST") { try attlistDecl(&c); return }
        if try startsWith(c, "<!ENTITY") { try entityDecl(&c); return }
        if try startsWith(c, "<!NOTATION") { try notationDecl(&c); return }
        if try startsWith(c, "<![") { throw err("conditional sections are not allowed in the internal subset", c, c.i) }
        throw err("unknown markup declaration", c, c.i)
    }

    func endDecl(_ c: inout Cur, _ what: String) throws {
        _ = try skipS(&c)
        try need(c, 1, what)
        guard c.p[c.i] == 0x3E else { throw err("expected '>' to end \(what)", c, c.i) }
        c.i += 1
    }

    func entityDecl(_ c: inout Cur) throws {
        c.i += 8
        try requireS(&c, "an entity declaration")
        try need(c, 1, "an entity declaration")
        var pe = false
        if c.p[c.i] == 0x25 {
            pe = true
            c.i += 1
            try requireS(&c, "an entity declaration")
        }
        let at = c.i
        let nr = try name(&c, "an entity name")
        if hasColon(c, nr) { throw err("an entity name may not contain ':'", c, nr.lowerBound) }
        try requireS(&c, "an entity declaration")
        try need(c, 1, "an entity declaration")
        var e = Entity()
        let q = c.p[c.i]
        if q == 0x22 || q == 0x27 {
            c.i += 1
            var text: [UInt8] = []
            while true {
                try need(c, 1, "an entity value")
                let b = c.p[c.i]
                if b == q { c.i += 1; break }
                if b == 0x25 { throw err("a parameter entity reference inside a declaration in the internal subset", c, c.i) }
                if b == 0x26 {
                    try need(c, 2, "an entity value")
                    if c.p[c.i + 1] == 0x23 {
                        XMLChars.appendUTF8(try charRef(&c), to: &text)
                    } else {
                        let rs = c.i
                        c.i += 1
                        _ = try name(&c, "an entity name")
                        try need(c, 1, "an entity value")
                        guard c.p[c.i] == 0x3B else { throw err("expected ';' after the entity name", c, c.i) }
                        c.i += 1
                        text.append(contentsOf: UnsafeBufferPointer(start: c.p + rs, count: c.i - rs))  // bypassed
                    }
                    continue
                }
                if b == 0x0D && !c.inEntity {
                    try need(c, 2, "an entity value")
                    text.append(0x0A)
                    c.i += c.p[c.i + 1] == 0x0A ? 2 : 1
                    continue
                }
                text.append(b)
                c.i += 1
            }
            e.text = text
        } else {
            try externalID(&c, systemOptional: false)
            e.external = true
            if !pe {
                let save = c.i
                let hadS = try skipS(&c)
                if hadS, try startsWith(c, "NDATA") {
                    c.i += 5
                    try requireS(&c, "an NDATA declaration")
                    let nn = try name(&c, "a notation name")
                    if hasColon(c, nn) { throw err("a notation name may not contain ':'", c, nn.lowerBound) }
                    e.unparsed = true
                } else {
                    c.i = save
                }
            }
        }
        try endDecl(&c, "an entity declaration")
        _ = at
        guard !stopDecls else { return }
        let nb = bytes(c, nr)
        if pe {
            if pentities[nb] == nil { pentities[nb] = e }
        } else if XMLPushParser.predefinedIndex(c.p + nr.lowerBound, nr.count) == nil, entities[nb] == nil {
            entities[nb] = e
        }
    }

    func notationDecl(_ c: inout Cur) throws {
        c.i += 10
        try requireS(&c, "a notation declaration")
        let nr = try name(&c, "a notation name")
        if hasColon(c, nr) { throw err("a notation name may not contain ':'", c, nr.lowerBound) }
        try requireS(&c, "a notation declaration")
        try externalID(&c, systemOptional: true)
        try endDecl(&c, "a notation declaration")
    }

    func elementDecl(_ c: inout Cur) throws {
        c.i += 9
        try requireS(&c, "an element declaration")
        _ = try name(&c, "an element name")
        try requireS(&c, "an element declaration")
        try need(c, 1, "an element declaration")
        if c.p[c.i] != 0x28 {
            let k = try name(&c, "a content specification")
            let kb = bytes(c, k)
            guard kb == Array("EMPTY".utf8) || kb == Array("ANY".utf8) else { throw err("expected EMPTY, ANY or '('", c, k.lowerBound) }
        } else {
            try contentModel(&c)
        }
        try endDecl(&c, "an element declaration")
    }

    /// Mixed or children (iterative: groups on a stack).
    func contentModel(_ c: inout Cur) throws {
        c.i += 1
        _ = try skipS(&c)
        if try startsWith(c, "#PCDATA") {
            c.i += 7
            var names = 0
            while true {
                _ = try skipS(&c)
                try need(c, 1, "a content model")
                let b = c.p[c.i]
                if b == 0x29 {
                    c.i += 1
                    if c.i < c.n && c.p[c.i] == 0x2A { c.i += 1 } else if names > 0 {
                        try need(c, 1, "a content model")
                        throw err("a mixed content model with names must end with ')*'", c, c.i)
                    } else if c.i == c.n && !c.final { throw XMLFail.needMore }
                    return
                }
                guard b == 0x7C else { throw err("expected '|' or ')' in a mixed content model", c, c.i) }
                c.i += 1
                _ = try skipS(&c)
                _ = try name(&c, "an element name")
                names += 1
            }
        }
        // children: groups of cp separated by one kind of separator.
        var seps: [UInt8] = [0]
        var counts: [Int] = [0]
        var expectCP = true
        while true {
            _ = try skipS(&c)
            try need(c, 1, "a content model")
            let b = c.p[c.i]
            if expectCP {
                if b == 0x28 {
                    if seps.count >= 512 { throw err("content model groups nested more than 512 deep", c, c.i, .limit) }
                    c.i += 1
                    seps.append(0); counts.append(0)
                    continue
                }
                _ = try name(&c, "an element name or '('")
                try suffix(&c)
                counts[counts.count - 1] += 1
                expectCP = false
                continue
            }
            if b == 0x29 {
                c.i += 1
                seps.removeLast(); counts.removeLast()
                try suffix(&c)
                if seps.isEmpty { return }
                counts[counts.count - 1] += 1
                continue
            }
            guard b == 0x7C || b == 0x2C else { throw err("expected '|', ',' or ')' in a content model", c, c.i) }
            if seps[seps.count - 1] == 0 { seps[seps.count - 1] = b } else if seps[seps.count - 1] != b {
                throw err("'|' and ',' mixed in one content model group", c, c.i)
            }
            c.i += 1
            expectCP = true
        }
    }

    func suffix(_ c: inout Cur) throws {
        try need(c, 1, "a content model")
        let b = c.p[c.i]
        if b == 0x3F || b == 0x2A || b == 0x2B { c.i += 1 }
    }

    func attlistDecl(_ c: inout Cur) throws {
        c.i += 9
        try requireS(&c, "an attribute-list declaration")
        let en = try name(&c, "an element name")
        var decls: [AttDecl] = []
        while true {
            let hadS = try skipS(&c)
            try need(c, 1, "an attribute-list declaration")
            if c.p[c.i] == 0x3E { c.i += 1; break }
            guard hadS else { throw err("whitespace required in an attribute-list declaration", c, c.i) }
            let an = try name(&c, "an attribute name")
            try requireS(&c, "an attribute-list declaration")
            try need(c, 1, "an attribute-list declaration")
            var isCDATA = false
            if c.p[c.i] == 0x28 {
                try enumeration(&c, nmtokens: true)
            } else {
                let t = try name(&c, "an attribute type")
                let tb = String(decoding: bytes(c, t), as: UTF8.self)
                switch tb {
                case "CDATA": isCDATA = true
                case "ID", "IDREF", "IDREFS", "ENTITY", "ENTITIES", "NMTOKEN", "NMTOKENS": break
                case "NOTATION":
                    try requireS(&c, "a NOTATION type")
                    try need(c, 1, "a NOTATION type")
                    guard c.p[c.i] == 0x28 else { throw err("expected '(' after NOTATION", c, c.i) }
                    try enumeration(&c, nmtokens: false)
                default: throw err("unknown attribute type '\(tb)'", c, t.lowerBound)
                }
            }
            try requireS(&c, "an attribute-list declaration")
            try need(c, 1, "an attribute-list declaration")
            var dv: [UInt8]? = nil
            if c.p[c.i] == 0x23 {
                c.i += 1
                let k = try name(&c, "#REQUIRED, #IMPLIED or #FIXED")
                let kb = String(decoding: bytes(c, k), as: UTF8.self)
                if kb == "FIXED" {
                    try requireS(&c, "an attribute-list declaration")
                } else if kb == "REQUIRED" || kb == "IMPLIED" {
                    decls.append(AttDecl(name: bytes(c, an), isCDATA: isCDATA, defaultValue: nil))
                    continue
                } else {
                    throw err("expected #REQUIRED, #IMPLIED or #FIXED", c, k.lowerBound)
                }
            }
            try need(c, 1, "an attribute default")
            let q = c.p[c.i]
            guard q == 0x22 || q == 0x27 else { throw err("expected a quoted default value", c, c.i) }
            c.i += 1
            var sv = XMLScratch<UInt8>()
            defer { sv.free() }
            try attValue(&c, quote: q, into: &sv)
            let v = sv.count == 0 ? [] : Array(UnsafeBufferPointer(start: sv.base, count: sv.count))
            dv = isCDATA ? v : XMLPushParser.collapse(v)
            decls.append(AttDecl(name: bytes(c, an), isCDATA: isCDATA, defaultValue: dv))
        }
        guard !stopDecls else { return }
        let key = bytes(c, en)
        var list = attlists[key] ?? []
        for d in decls where !list.contains(where: { $0.name == d.name }) { list.append(d) }
        attlists[key] = list
    }

    /// `( a | b )` of Nmtokens or Names.
    func enumeration(_ c: inout Cur, nmtokens: Bool) throws {
        c.i += 1
        while true {
            _ = try skipS(&c)
            if nmtokens { try nmtoken(&c) } else { _ = try name(&c, "a notation name") }
            _ = try skipS(&c)
            try need(c, 1, "an enumeration")
            let b = c.p[c.i]
            c.i += 1
            if b == 0x29 { return }
            guard b == 0x7C else { throw err("expected '|' or ')' in an enumeration", c, c.i - 1) }
        }
    }

    func nmtoken(_ c: inout Cur) throws {
        let s = c.i
        while c.i < c.n {
            let b = c.p[c.i]
            if b < 0x80 {
                if XMLChars.ascii[Int(b)] & 2 == 0 { break }
                c.i += 1
            } else {
                let (ch, l) = XMLChars.decode(c.p, c.i)
                if !XMLChars.isNameChar(ch) { break }
                c.i += l
            }
        }
        if c.i == c.n && !c.final { throw XMLFail.needMore }
        if c.i == s { throw err("expected a name token", c, c.i) }
    }
}

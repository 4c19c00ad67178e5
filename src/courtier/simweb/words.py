"""Small word lists from which the simulated web writes sentences in six languages.

Each language has singular subjects, verbs agreeing with them, objects and endings, so a
sentence is grammatical enough for a language identifier to see the language's own words
(articles, prepositions, inflections), and the boilerplate a site wraps around its articles
(cookie banner, advertisement, related links, footer), in that language.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    code: str
    subjects: tuple[str, ...]
    verbs: tuple[str, ...]
    objects: tuple[str, ...]
    endings: tuple[str, ...]
    cookie: str
    accept: str
    advert: str
    related: str
    footer: str
    home: str


def _words(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split("|"))


LANGUAGES: tuple[Language, ...] = (
    Language(
        "en",
        _words(
            "the mayor | our neighbour | the old teacher | a young farmer | the city council |"
            " the local baker | my grandmother | the new doctor | a small company | the museum"
        ),
        _words(
            "has opened | wants to build | is looking for | will present | has bought |"
            " carefully repaired | would like to visit | quickly sold | often talks about |"
            " has finally found"
        ),
        _words(
            "a new bridge over the river | the house near the station | an old wooden boat |"
            " the school garden | a bigger library for the children | the market square |"
            " the empty factory | a quiet road through the hills | the summer festival |"
            " the long history of the village"
        ),
        _words(
            "after a difficult winter | before the end of the year | with the help of friends |"
            " because the weather was good | without telling anyone | during the holidays |"
            " for the first time in years | although the costs were high | on a rainy morning |"
            " in front of many visitors"
        ),
        "We use cookies to give you the best experience on our website. Do you accept all cookies?",
        "Accept all",
        "Buy now and save twenty percent on every order this weekend only!",
        "You might also like",
        "All rights reserved. Terms of use and privacy policy apply to this website.",
        "Home",
    ),
    Language(
        "de",
        _words(
            "der Bürgermeister | unser Nachbar | die alte Lehrerin | ein junger Bauer |"
            " der Stadtrat | der Bäcker aus dem Dorf | meine Großmutter | die neue Ärztin |"
            " eine kleine Firma | das Museum"
        ),
        _words(
            "hat eröffnet | möchte bauen | sucht seit Wochen | wird vorstellen | hat gekauft |"
            " hat sorgfältig repariert | will besuchen | verkauft schnell | spricht oft über |"
            " hat endlich gefunden"
        ),
        _words(
            "eine neue Brücke über den Fluss | das Haus neben dem Bahnhof | ein altes Holzboot |"
            " den Schulgarten | eine größere Bibliothek für die Kinder | den Marktplatz |"
            " die leere Fabrik | eine ruhige Straße durch die Hügel | das Sommerfest |"
            " die lange Geschichte des Dorfes"
        ),
        _words(
            "nach einem schwierigen Winter | noch vor dem Ende des Jahres |"
            " mit der Hilfe von Freunden | weil das Wetter gut war | ohne es jemandem zu sagen |"
            " während der Ferien | zum ersten Mal seit Jahren | obwohl die Kosten hoch waren |"
            " an einem regnerischen Morgen | vor vielen Besuchern"
        ),
        "Wir verwenden Cookies, um Ihnen das beste Erlebnis auf unserer Webseite zu bieten."
        " Akzeptieren Sie alle Cookies?",
        "Alle akzeptieren",
        "Jetzt kaufen und nur an diesem Wochenende zwanzig Prozent bei jeder Bestellung sparen!",
        "Das könnte Sie auch interessieren",
        "Alle Rechte vorbehalten. Es gelten die Nutzungsbedingungen und die Datenschutzerklärung.",
        "Startseite",
    ),
    Language(
        "fr",
        _words(
            "le maire | notre voisin | la vieille institutrice | un jeune agriculteur |"
            " le conseil municipal | le boulanger du quartier | ma grand-mère |"
            " la nouvelle médecin | une petite entreprise | le musée"
        ),
        _words(
            "a ouvert | veut construire | cherche depuis longtemps | va présenter | a acheté |"
            " a réparé avec soin | aimerait visiter | a vendu rapidement | parle souvent de |"
            " a enfin trouvé"
        ),
        _words(
            "un nouveau pont sur la rivière | la maison près de la gare |"
            " un vieux bateau en bois | le jardin de l'école |"
            " une plus grande bibliothèque pour les enfants | la place du marché |"
            " l'usine vide | une route tranquille à travers les collines | la fête de l'été |"
            " la longue histoire du village"
        ),
        _words(
            "après un hiver difficile | avant la fin de l'année | avec l'aide de ses amis |"
            " parce que le temps était beau | sans le dire à personne | pendant les vacances |"
            " pour la première fois depuis des années | bien que les coûts soient élevés |"
            " par un matin pluvieux | devant de nombreux visiteurs"
        ),
        "Nous utilisons des cookies pour vous offrir la meilleure expérience sur notre site."
        " Acceptez-vous tous les cookies ?",
        "Tout accepter",
        "Achetez maintenant et économisez vingt pour cent sur chaque commande ce week-end !",
        "Vous aimerez aussi",
        "Tous droits réservés. Les conditions d'utilisation et la politique de confidentialité"
        " s'appliquent.",
        "Accueil",
    ),
    Language(
        "es",
        _words(
            "el alcalde | nuestro vecino | la vieja maestra | un joven agricultor |"
            " el ayuntamiento | el panadero del barrio | mi abuela | la nueva doctora |"
            " una pequeña empresa | el museo"
        ),
        _words(
            "ha abierto | quiere construir | busca desde hace meses | va a presentar |"
            " ha comprado | ha reparado con cuidado | quiere visitar | vendió rápidamente |"
            " habla a menudo de | por fin ha encontrado"
        ),
        _words(
            "un puente nuevo sobre el río | la casa cerca de la estación |"
            " un viejo barco de madera | el huerto de la escuela |"
            " una biblioteca más grande para los niños | la plaza del mercado |"
            " la fábrica vacía | un camino tranquilo entre las colinas | la fiesta del verano |"
            " la larga historia del pueblo"
        ),
        _words(
            "después de un invierno difícil | antes del final del año |"
            " con la ayuda de sus amigos | porque hacía buen tiempo | sin decírselo a nadie |"
            " durante las vacaciones | por primera vez en años |"
            " aunque los costes eran altos | en una mañana lluviosa | delante de muchos visitantes"
        ),
        "Utilizamos cookies para ofrecerle la mejor experiencia en nuestro sitio web."
        " ¿Acepta todas las cookies?",
        "Aceptar todas",
        "¡Compre ahora y ahorre un veinte por ciento en cada pedido solo este fin de semana!",
        "También le puede interesar",
        "Todos los derechos reservados. Se aplican las condiciones de uso y la política de"
        " privacidad.",
        "Inicio",
    ),
    Language(
        "it",
        _words(
            "il sindaco | il nostro vicino | la vecchia maestra | un giovane contadino |"
            " il consiglio comunale | il fornaio del quartiere | mia nonna | la nuova dottoressa |"
            " una piccola azienda | il museo"
        ),
        _words(
            "ha aperto | vuole costruire | cerca da mesi | presenterà | ha comprato |"
            " ha riparato con cura | vorrebbe visitare | ha venduto in fretta | parla spesso di |"
            " ha finalmente trovato"
        ),
        _words(
            "un nuovo ponte sul fiume | la casa vicino alla stazione |"
            " una vecchia barca di legno | l'orto della scuola |"
            " una biblioteca più grande per i bambini | la piazza del mercato |"
            " la fabbrica vuota | una strada tranquilla tra le colline | la festa d'estate |"
            " la lunga storia del paese"
        ),
        _words(
            "dopo un inverno difficile | prima della fine dell'anno | con l'aiuto degli amici |"
            " perché il tempo era bello | senza dirlo a nessuno | durante le vacanze |"
            " per la prima volta dopo anni | anche se i costi erano alti |"
            " in una mattina di pioggia | davanti a molti visitatori"
        ),
        "Utilizziamo i cookie per offrirti la migliore esperienza sul nostro sito."
        " Accetti tutti i cookie?",
        "Accetta tutti",
        "Acquista ora e risparmia il venti per cento su ogni ordine solo questo fine settimana!",
        "Potrebbe interessarti anche",
        "Tutti i diritti riservati. Si applicano le condizioni d'uso e l'informativa sulla"
        " privacy.",
        "Pagina iniziale",
    ),
    Language(
        "nl",
        _words(
            "de burgemeester | onze buurman | de oude lerares | een jonge boer |"
            " de gemeenteraad | de bakker uit de buurt | mijn grootmoeder | de nieuwe dokter |"
            " een klein bedrijf | het museum"
        ),
        _words(
            "heeft geopend | wil bouwen | zoekt al weken naar | gaat presenteren | heeft gekocht |"
            " heeft zorgvuldig gerepareerd | wil graag bezoeken | verkocht snel |"
            " praat vaak over | heeft eindelijk gevonden"
        ),
        _words(
            "een nieuwe brug over de rivier | het huis naast het station |"
            " een oude houten boot | de schooltuin | een grotere bibliotheek voor de kinderen |"
            " het marktplein | de lege fabriek | een rustige weg door de heuvels |"
            " het zomerfeest | de lange geschiedenis van het dorp"
        ),
        _words(
            "na een moeilijke winter | nog voor het einde van het jaar |"
            " met de hulp van vrienden | omdat het weer goed was | zonder het iemand te zeggen |"
            " tijdens de vakantie | voor het eerst in jaren | hoewel de kosten hoog waren |"
            " op een regenachtige ochtend | voor veel bezoekers"
        ),
        "Wij gebruiken cookies om u de beste ervaring op onze website te bieden."
        " Accepteert u alle cookies?",
        "Alles accepteren",
        "Koop nu en bespaar alleen dit weekend twintig procent op elke bestelling!",
        "Dit vindt u misschien ook leuk",
        "Alle rechten voorbehouden. De gebruiksvoorwaarden en het privacybeleid zijn van"
        " toepassing.",
        "Startpagina",
    ),
)
